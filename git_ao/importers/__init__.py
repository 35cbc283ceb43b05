"""Sessions other tools keep: each reader turns a tool's own state into sessions git-ao registers."""
