"""`/triage` commands: parsing a comment (commands), running one (command_job) and the
replies (command_replies). It may import triage and everything below it; never the service
or the command line.
"""
