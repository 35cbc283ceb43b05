"""The click commands: parse, call the workflows, render. Kept thin on purpose."""
