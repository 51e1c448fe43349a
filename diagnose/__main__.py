from diagnose.cli import entry

entry()
