"""The click commands: parse, call lifecycle, render. Kept thin on purpose."""
