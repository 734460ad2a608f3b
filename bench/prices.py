"""AWS list prices the benchmarks turn their measurements into dollars with: us-east-1, on-demand, no free tier.

As of January 2025 (the author's knowledge; check https://aws.amazon.com/pricing before quoting them): Step
Functions Standard $0.025 per 1,000 state transitions; Lambda (x86_64, as CLM's functions are deployed)
$0.0000166667 per GB-second and $0.20 per million requests; DynamoDB on-demand (after the November 2024 cut)
$0.125 per million read request units and $0.625 per million write request units; S3 Standard $0.005 per 1,000
PUT, COPY, POST and LIST requests and $0.0004 per 1,000 GET and other requests. API calls to Step Functions
(StartExecution, ListExecutions, ...) are not charged.
"""

from __future__ import annotations

REGION = "us-east-1"
AS_OF = "2025-01"
STATE_TRANSITION = 0.025 / 1_000
LAMBDA_GB_SECOND = 0.0000166667
LAMBDA_REQUEST = 0.20 / 1_000_000
DYNAMODB_READ_UNIT = 0.125 / 1_000_000
DYNAMODB_WRITE_UNIT = 0.625 / 1_000_000
S3_PUT_LIST = 0.005 / 1_000
S3_GET_OTHER = 0.0004 / 1_000
