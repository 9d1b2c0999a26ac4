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
JOBS_GIVEN_UP = Counter(
    "triage_bot_jobs_given_up",
    "Jobs recorded failed for good by this process, by kind and reason (permanent, retries, "
    "or the outage that outlasted TRIAGE_OUTAGE_RETRY_HOURS: github_5xx, github_unreachable, "
    "log_host)",
    ["kind", "reason"],
)
JOB_OUTAGE_RETRIES = Counter(
    "triage_bot_job_outage_retries",
    "Job attempts put off because GitHub or its log host was down, by reason",
    ["reason"],
)
JOBS_WAITING_ON_OUTAGE = Gauge(
    "triage_bot_jobs_waiting_on_outage",
    "Queued jobs waiting to try again after an outage, by reason (read at scrape time)",
    ["reason"],
)
JOBS_FAILED_ON_OUTAGE = Gauge(
    "triage_bot_jobs_failed_on_outage",
    "Jobs in the ledger given up on after an outage outlasted the retry budget, by reason "
    "(read at scrape time)",
    ["reason"],
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


def read_outages(counts: dict[tuple[str, str], int]) -> None:
    """Set the outage gauges from JobLedger.outage_counts() ({(status, reason): jobs})."""
    for (status, reason), count in counts.items():
        gauge = JOBS_WAITING_ON_OUTAGE if status == "queued" else JOBS_FAILED_ON_OUTAGE
        gauge.labels(reason).set(count)


def exposition() -> tuple[bytes, str]:
    """The text exposition of every metric in this process, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST
