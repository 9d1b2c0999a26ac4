"""The service: the web server (webhooks, health, metrics: server; the dashboard's sign-in
and access check: dashboard_auth, dashboard_github), which webhooks become which
jobs (events), the durable queue (queue) over its transport (queue_transport), the job
handler's contract and the handler that dispatches jobs by kind (handler), and the worker. It
may import commands and everything below; never the command line.
"""
