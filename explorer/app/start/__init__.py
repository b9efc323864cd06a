"""Starting the app: the QApplication and its event loop (boot), the launch, and the screenshots run."""
