"""Print a shell completion script for diagnose: bash, zsh or fish.

The script completes the commands, each command's options, the choices of an option that has
them (--format json) and file names where a path goes. It is generated from diagnose's own
command line, so it always knows every option, and it completes without running diagnose.

    bash:  diagnose completion bash > ~/.local/share/bash-completion/completions/diagnose
           (or: eval "$(diagnose completion bash)" in ~/.bashrc)
    zsh:   diagnose completion zsh > "${fpath[1]}/_diagnose"
           (or: eval "$(diagnose completion zsh)" in ~/.zshrc, after compinit)
    fish:  diagnose completion fish > ~/.config/fish/completions/diagnose.fish
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")
FILE = "@file"  # an option value or positional that is a path
# metavars that name a path (SCRIPT, PATH, FILE, DIR/, SOURCE, REPORT.json, FILE.jsonl|DIR|-)
_PATHLIKE = re.compile(r"PATH|FILE|DIR|SOURCE|SCRIPT|MESSAGE|\.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def main(args: argparse.Namespace) -> int:
    from diagnose.cli import build_parser

    spec = read_spec(build_parser())
    sys.stdout.write({"bash": bash, "zsh": zsh, "fish": fish}[args.shell](spec))
    return 0


@dataclass
class Level:
    """One command level (``""``, ``run``, ``dataset validate``): what may be typed there."""

    options: list[str] = field(default_factory=list)
    values: dict[str, list[str]] = field(default_factory=dict)  # option -> choices, or [FILE]
    helps: dict[str, str] = field(default_factory=dict)  # option or subcommand -> help
    subcommands: list[str] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)  # a positional's choices (bash zsh fish)
    files: bool = False  # a positional here is a path
    rest: bool = False  # after its first positional, the words are a script's


def read_spec(parser: argparse.ArgumentParser) -> dict[str, Level]:
    """Every level of ``parser``, keyed by the words that lead to it (``"dataset validate"``)."""
    spec: dict[str, Level] = {}
    _read(parser, "", spec)
    return spec


def _read(parser: argparse.ArgumentParser, path: str, spec: dict[str, Level]) -> None:
    level = spec[path] = Level()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, child in action.choices.items():
                level.subcommands.append(name)
                level.helps[name] = helps.get(name, "")
                _read(child, f"{path} {name}".strip(), spec)
        elif action.option_strings:
            level.options += action.option_strings
            for option in action.option_strings:
                level.helps[option] = _one_line(action.help)
            if action.nargs != 0:
                takes = _value_kind(action)
                if takes is not None:
                    for option in action.option_strings:
                        level.values[option] = takes
        elif action.choices is not None:
            level.choices += [str(c) for c in action.choices]
        else:
            level.files = level.files or bool(_PATHLIKE.search(action.metavar or action.dest))
            level.rest = level.rest or action.nargs == argparse.REMAINDER
    if path == "":  # ``diagnose SCRIPT ...`` is ``diagnose run SCRIPT ...``
        level.files = level.rest = True


def _value_kind(action: argparse.Action) -> list[str] | None:
    if action.choices is not None:
        return [str(c) for c in action.choices]
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if _PATHLIKE.search(metavar) or getattr(action.type, "__name__", "") in ("Path", "PosixPath"):
        return [FILE]
    return []  # a value with nothing to offer (a number, an id)


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()).replace("%%", "%")


def _words(items: list[str]) -> str:
    return " ".join(items)


def _bash_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def bash(spec: dict[str, Level]) -> str:
    """A bash (4+) completion function; zsh reuses it through ``bashcompinit``.

    The tables are keyed by ``>`` and the words that lead to a level (``>dataset validate``):
    bash refuses an empty key.
    """
    subs = "\n".join(
        f"    [{_bash_quote('>' + p)}]={_bash_quote(_words(lv.subcommands))}"
        for p, lv in spec.items()
    )
    words = "\n".join(
        f"    [{_bash_quote('>' + p)}]={_bash_quote(_words(lv.subcommands + lv.choices))}"
        for p, lv in spec.items()
    )
    opts = "\n".join(
        f"    [{_bash_quote('>' + p)}]={_bash_quote(_words(lv.options))}" for p, lv in spec.items()
    )
    vals = "\n".join(
        f"    [{_bash_quote('>' + p + '|' + o)}]={_bash_quote(_words(v) or '@none')}"
        for p, lv in spec.items()
        for o, v in lv.values.items()
    )
    flags = "\n".join(
        f"    [{_bash_quote('>' + p)}]={_bash_quote(('f' if lv.files else '') + ('r' if lv.rest else ''))}"
        for p, lv in spec.items()
    )
    return _BASH.format(subs=subs, words=words, opts=opts, vals=vals, flags=flags)


_BASH = """\
# diagnose shell completion (bash; generated by 'diagnose completion bash')
declare -gA _diagnose_subs=(
{subs}
)
declare -gA _diagnose_words=(
{words}
)
declare -gA _diagnose_opts=(
{opts}
)
declare -gA _diagnose_vals=(
{vals}
)
declare -gA _diagnose_kind=(
{flags}
)

_diagnose() {{
    [[ -n ${{ZSH_VERSION-}} ]] && setopt localoptions ksharrays
    # keys are held in a variable: zsh keeps quotes written inside a subscript
    local cur=${{COMP_WORDS[COMP_CWORD]}} level=">" key word values
    local -i i=1
    COMPREPLY=()
    while (( i < COMP_CWORD )); do
        word=${{COMP_WORDS[i]}}
        key="$level|$word"
        if [[ -n ${{_diagnose_vals[$key]+x}} ]]; then
            i+=2
            continue
        fi
        if [[ $word == -* ]]; then
            i+=1
            continue
        fi
        if [[ " ${{_diagnose_subs[$level]}} " == *" $word "* ]]; then
            [[ $level == ">" ]] && level=">$word" || level="$level $word"
            i+=1
            continue
        fi
        # a positional: after a script, the words are the script's own
        if [[ ${{_diagnose_kind[$level]}} == *r* ]]; then
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0
        fi
        i+=1
    done
    if (( COMP_CWORD > 1 )); then
        key="$level|${{COMP_WORDS[COMP_CWORD-1]}}"
        values=${{_diagnose_vals[$key]-}}
        if [[ $values == @file ]]; then
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0
        elif [[ $values == @none ]]; then
            return 0
        elif [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
            return 0
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${{_diagnose_opts[$level]}}" -- "$cur"))
        return 0
    fi
    COMPREPLY=($(compgen -W "${{_diagnose_words[$level]}}" -- "$cur"))
    if [[ ${{_diagnose_kind[$level]}} == *f* ]]; then
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
    return 0
}}
complete -o filenames -o bashdefault -F _diagnose diagnose
"""


def zsh(spec: dict[str, Level]) -> str:
    """zsh runs the bash function through its ``bashcompinit`` layer (0-based arrays on)."""
    return (
        "#compdef diagnose\n"
        "# diagnose shell completion (zsh; generated by 'diagnose completion zsh')\n"
        "autoload -U +X compinit && { (( $+functions[compdef] )) || compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(spec).split("\n", 1)[1]
    )


def fish(spec: dict[str, Level]) -> str:
    """``complete`` lines, each level guarded by the words that lead to it."""
    out = [
        "# diagnose shell completion (fish; generated by 'diagnose completion fish')",
        "complete -c diagnose -e",
        # the level the words typed so far lead to; after a script, its own arguments
        "function __diagnose_at --description 'whether the words typed lead to level $argv[1]'",
        "    set -l level ''",
        "    set -l skip 0",
        "    for word in (commandline -opc)[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        '        else if contains -- "$level|$word" $__diagnose_valued',
        "            set skip 1",
        "        else if string match -q -- '-*' $word",
        "            continue",
        '        else if contains -- (string trim -- "$level $word") $__diagnose_levels',
        '            set level (string trim -- "$level $word")',
        '        else if contains -- "$level" $__diagnose_rest',
        "            set level '@script'",
        "            break",
        "        end",
        "    end",
        '    test "$level" = "$argv[1]"',
        "end",
        "set -g __diagnose_levels " + " ".join(_fish_quote(p) for p in spec if p),
        "set -g __diagnose_rest " + " ".join(_fish_quote(p) for p, lv in spec.items() if lv.rest),
        "set -g __diagnose_valued "
        + " ".join(_fish_quote(f"{p}|{o}") for p, lv in spec.items() for o in lv.values),
        "complete -c diagnose -n '__diagnose_at @script' -F",
    ]
    for path, level in spec.items():
        when = f"-n {_fish_quote(f'__diagnose_at {_fish_quote(path)}')}"
        files = "-F" if level.files else "-f"
        for name in level.subcommands:
            out.append(
                f"complete -c diagnose {when} {files} -a {_fish_quote(name)} "
                f"-d {_fish_quote(level.helps.get(name, ''))}"
            )
        if not level.files:
            out.append(f"complete -c diagnose {when} -f")
        for name in level.choices:
            out.append(f"complete -c diagnose {when} -f -a {_fish_quote(name)}")
        for option in level.options:
            flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            values = level.values.get(option)
            takes = ""
            if values == [FILE]:
                takes = " -r -F"
            elif values:
                takes = f" -x -a {_fish_quote(' '.join(values))}"
            elif values == []:
                takes = " -x"
            out.append(
                f"complete -c diagnose {when} {flag}{takes} "
                f"-d {_fish_quote(level.helps.get(option, ''))}"
            )
    return "\n".join(out) + "\n"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
