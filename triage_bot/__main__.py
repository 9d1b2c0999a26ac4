from triage_bot.cli import main

raise SystemExit(main())
