"""The command line: one Typer app (app.py) with its commands in the modules beside it, and the
console entry point (entry.py), which runs a plain tick without importing Typer."""
