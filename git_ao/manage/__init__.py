"""Workflows that keep the records: register, kill, prune, recover, doctor, and the listing they print."""
