"""Sessions across machines: pushing preserve refs, the remote's namespace, restoring from a remote."""
