"""What the app shows and keeps: the Session (trace and selection), and sessions as files with their autosave."""
