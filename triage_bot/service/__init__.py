"""The service: the web server (webhooks, health, metrics), which webhooks become which jobs
(events with comment_events, installation_events, payload_fields, event_decision), the
durable queue (queue, queue_transport, sqlite_queue), the job contract and the handler that
dispatches jobs by kind (job_handler, handler), and the worker. It may import commands and
everything below; never the command line.
"""
