from triage_bot.cli.cli import main

raise SystemExit(main())
