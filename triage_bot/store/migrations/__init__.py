"""The database's Alembic migrations (triage_bot.store.migrate runs them; env.py is Alembic's
entry point, versions/ holds one file per revision). They ship inside the package so that an
installed wheel can upgrade its database."""
