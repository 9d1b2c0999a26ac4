"""Prometheus metrics, defined once here so every module increments the same series.

They live in prometheus_client's default registry: one set per process. `GET /metrics` on the
server shows that process's counters plus gauges read at scrape time from the database and the
queue (queue depth, jobs by status), which are the same whichever process asks, so failed jobs
are visible on the server even when separate worker processes ran them.

The GitHub client (github.py) increments GITHUB_API_CALLS, GITHUB_API_RETRIES and
GITHUB_RATE_LIMIT_WAITS, and adds downloaded bytes to LOG_BYTES.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

DELIVERIES = Counter(
    "triage_bot_webhook_deliveries",
    "Webhook deliveries received, by event and outcome (job, coalesced, record, pong, ignored, "
    "refused, duplicate, unauthorized, malformed, too_large)",
    ["event", "outcome"],
)
WEBHOOK_SECONDS = Histogram(
    "triage_bot_webhook_seconds",
    "Time to acknowledge a webhook delivery",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
)
QUEUE_DEPTH = Gauge("triage_bot_queue_depth", "Jobs waiting in the queue (read at scrape time)")
QUEUE_SCHEDULED = Gauge(
    "triage_bot_queue_scheduled", "Jobs waiting for a retry delay (read at scrape time)"
)
JOBS = Gauge("triage_bot_jobs", "Jobs in the ledger by status (read at scrape time)", ["status"])
JOB_SECONDS = Histogram(
    "triage_bot_job_seconds",
    "Time one job attempt took, by kind and outcome (done, retry, failed)",
    ["kind", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600),
)
TRIAGE_SECONDS = Histogram(
    "triage_bot_triage_seconds",
    "Time one successful triage took, from claim to comment",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600),
)
JOB_RETRIES = Counter("triage_bot_job_retries", "Job attempts that failed and will retry", ["kind"])
JOBS_DEFERRED = Counter(
    "triage_bot_jobs_deferred",
    "Job attempts put off without counting as a failure (RetryLater, GitHub rate limits)",
    ["kind"],
)
JOBS_FAILED = Counter(
    "triage_bot_jobs_failed", "Jobs that failed for good (retries used up or permanent)", ["kind"]
)
JOBS_REQUEUED = Counter(
    "triage_bot_jobs_requeued",
    "Jobs pushed again by the sweep (a worker died, or a push was lost)",
    ["reason"],
)
GITHUB_API_CALLS = Counter(
    "triage_bot_github_api_calls",
    "GitHub API requests, by endpoint template and HTTP status ('error' for no response)",
    ["endpoint", "status"],
)
GITHUB_API_RETRIES = Counter(
    "triage_bot_github_api_retries",
    "GitHub API requests retried, by reason (5xx, timeout, rate_limit, retry_after)",
    ["reason"],
)
GITHUB_RATE_LIMIT_WAITS = Counter(
    "triage_bot_github_rate_limit_wait_seconds", "Seconds spent waiting for GitHub rate limits"
)
LOG_BYTES = Counter("triage_bot_log_bytes", "Bytes of job logs downloaded")


def exposition() -> tuple[bytes, str]:
    """The text exposition of every metric in this process, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST
