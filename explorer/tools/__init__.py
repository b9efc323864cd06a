"""Command-line subcommands, one module each: add_arguments(parser) and run(args) -> int."""
