# Overrides the training script's globals, as nanoGPT's configurator does: each argument is
# either a config file to exec or a --key=value whose value replaces the global of that name.
import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    if "=" not in arg:
        assert not arg.startswith("--")
        exec(open(arg).read())  # noqa: SIM115 (as nanoGPT spells it)
    else:
        assert arg.startswith("--")
        key, val = arg.split("=")
        key = key[2:]
        if key not in globals():
            raise ValueError(f"Unknown config key: {key}")
        try:
            attempt = literal_eval(val)
        except (SyntaxError, ValueError):
            attempt = val
        assert type(attempt) is type(globals()[key])
        globals()[key] = attempt
