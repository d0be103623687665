"""The subcommands of ``thinkprobe``, one module each: ``add_parser(sub)`` registers the subcommand and its
options and binds its ``run(args) -> int`` with ``set_defaults(func=run)``; :func:`thinkprobe.cli.main` calls
``args.func(args)``.

The command line is the package's top layer: these modules import the rest, nothing imports them
(``tests/test_import_graph.py``). Registering a subcommand imports no heavy library (pandas, numpy, torch,
vLLM): each ``run`` imports what it needs when it runs, so ``thinkprobe --help`` stays fast.
"""

#: The subcommands, in the order ``thinkprobe --help`` lists them (each is ``thinkprobe.commands.<name>``).
COMMANDS = ("analyze", "profile", "ablate", "agree", "validate", "trajectory", "plan", "preflight", "show",
            "summary", "migrate")
