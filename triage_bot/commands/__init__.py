"""`/triage` commands: parsing a comment (commands), running one and its replies
(command_job). It may import triage and everything below it; never the service or the
command line.
"""
