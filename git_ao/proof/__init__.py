"""Proofs about a worktree's directory: the walk against the capture, after a move, and what came back."""
