"""git-ao's own state under the data dir: the SQLite database and its records, settings, locks, the log and the trash."""
