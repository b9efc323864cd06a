"""The window chrome: the main window that composes, its menus, toolbars, status bar, docks, dialogs and the
settings and theme it remembers."""
