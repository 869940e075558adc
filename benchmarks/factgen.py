"""A seeded generator of a software project's history of claims: facts that change, facts that never do, traps.

    python -m benchmarks.factgen            # writes data/changing_facts.json (seed 7)

Every fact has a timeline of values and several plain-English ways a person states it. A
change is stated plainly, as a person would ("the dev server is on port 4000 now"),
never as "X replaces Y". Distractors are facts that sound like a changing fact but are
about something else (the staging database vs the production one); they never change,
so a memory that lets a change kill them has killed a live fact.

The output lists sessions (dated, a week or so apart) and the claims made in each, and
for every fact its questions, its current value and its dead values. The same seed
always gives the same file.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "data" / "changing_facts.json"
SEED = 7
SESSIONS = 14
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

# id, category, values over time (changing: 2 or 3; others: 1), questions, ways to say it ({v} = value).
# A distractor names the changing fact it is a trap for.
FACTS: list[dict[str, Any]] = [
    # ---- facts that change ------------------------------------------------------------
    dict(id="dev_port", values=["3000", "4000"], questions=["What port does the dev server use?"],
         say=["The dev server runs on port {v}.", "The dev server is on port {v} now.",
              "Dev server port is {v}.", "We run the dev server on port {v}."]),
    dict(id="standup", values=["9:30", "10:30"], questions=["What time is the daily standup?"],
         say=["Daily standup is at {v}.", "The team moved the daily standup to {v}.",
              "Our daily standup starts at {v}."]),
    dict(id="prod_db", values=["PostgreSQL 14", "PostgreSQL 15"],
         questions=["Which database version does production run?"],
         say=["The production database runs {v}.", "Production is on {v} now.",
              "The production database is {v}."]),
    dict(id="ci", values=["Jenkins", "GitHub Actions"], questions=["What do we use for CI?"],
         say=["Our CI runs on {v}.", "CI is on {v} now.", "We use {v} for CI."]),
    dict(id="backend_lead", values=["Alice", "Priya"], questions=["Who leads the backend team?"],
         say=["The backend team is led by {v}.", "{v} leads the backend team now.",
              "The backend team lead is {v}."]),
    dict(id="node", values=["Node 18", "Node 20", "Node 22"], questions=["Which Node version does the web app use?"],
         say=["The web app runs on {v}.", "The web app is on {v} now.", "We build the web app with {v}."]),
    dict(id="python", values=["Python 3.11", "Python 3.12"], questions=["Which Python version does the backend use?"],
         say=["The backend runs on {v}.", "The backend is on {v} now.", "We use {v} for the backend."]),
    dict(id="deploy_day", values=["Tuesday", "Thursday"], questions=["Which day do production deploys happen?"],
         say=["Production deploys happen on {v}.", "We deploy to production on {v} now.",
              "Production deploy day is {v}."]),
    dict(id="pm", values=["Maria", "Tom"], questions=["Who is the product manager for the checkout project?"],
         say=["The product manager for checkout is {v}.", "{v} is the product manager for checkout now.",
              "Checkout's product manager is {v}."]),
    dict(id="cache_ttl", values=["10 minutes", "30 minutes"], questions=["What is the TTL of the product cache?"],
         say=["The product cache TTL is {v}.", "Product cache entries expire after {v}.",
              "The product cache TTL is set to {v} now."]),
    dict(id="upload", values=["10 MB", "25 MB", "50 MB"], questions=["What is the maximum upload size?"],
         say=["The maximum upload size is {v}.", "Uploads are capped at {v} now.", "The upload limit is {v}."]),
    dict(id="rate_limit", values=["100", "500"], questions=["What is the public API rate limit?"],
         say=["The public API rate limit is {v} requests per minute.",
              "The public API allows {v} requests per minute now.",
              "Rate limit on the public API is {v} requests per minute."]),
    dict(id="logs", values=["Papertrail", "Datadog"], questions=["Where do we ship our logs?"],
         say=["We ship our logs to {v}.", "Logs go to {v} now.", "Our logs are shipped to {v}."]),
    dict(id="flags", values=["LaunchDarkly", "Unleash"], questions=["Which feature flag service do we use?"],
         say=["Feature flags are managed in {v}.", "We use {v} for feature flags now.",
              "Our feature flag service is {v}."]),
    dict(id="search_engine", values=["Elasticsearch", "OpenSearch"],
         questions=["What powers product search?"],
         say=["Product search is powered by {v}.", "Product search runs on {v} now.",
              "We use {v} for product search."]),
    dict(id="react", values=["React 17", "React 18"], questions=["Which React version does the storefront use?"],
         say=["The storefront uses {v}.", "The storefront is on {v} now.", "We build the storefront with {v}."]),
    dict(id="queue", values=["RabbitMQ", "Kafka"], questions=["What message queue do the order services use?"],
         say=["The order services talk through {v}.", "Order services use {v} as their message queue now.",
              "The message queue for the order services is {v}."]),
    dict(id="approvals", values=["one", "two"], questions=["How many approvals does a pull request need?"],
         say=["Pull requests need {v} approvals before merging.", "A pull request needs {v} approvals now.",
              "We require {v} approvals on every pull request."]),
    dict(id="coverage", values=["80%", "85%"], questions=["What is the test coverage threshold?"],
         say=["The test coverage threshold is {v}.", "CI fails below {v} test coverage now.",
              "Test coverage must stay above {v}."]),
    dict(id="sprint", values=["two weeks", "three weeks"], questions=["How long are our sprints?"],
         say=["Our sprints last {v}.", "Sprints are {v} long now.", "We run {v} sprints."]),
    dict(id="oncall", values=["Kenji", "Sofia", "Lucas"], questions=["Who is on call for the payments service?"],
         say=["{v} is on call for the payments service.", "The payments service on-call is {v} this week.",
              "On call for payments this week: {v}."]),
    dict(id="region", values=["Frankfurt", "Dublin"], questions=["Which region hosts the production cluster?"],
         say=["The production cluster is hosted in {v}.", "The production cluster runs in {v} now.",
              "We host the production cluster in {v}."]),
    dict(id="freeze", values=["March 20", "March 27"], questions=["When is the code freeze for the spring release?"],
         say=["Code freeze for the spring release is on {v}.", "The spring release code freeze is {v} now.",
              "We freeze code for the spring release on {v}."]),
    dict(id="design_tool", values=["Sketch", "Figma"], questions=["Which tool do designers use for mockups?"],
         say=["Designers make mockups in {v}.", "The designers use {v} for mockups now.",
              "Mockups are done in {v}."]),
    dict(id="branch", values=["master", "main"], questions=["What is the default branch of the monorepo?"],
         say=["The default branch of the monorepo is {v}.", "The monorepo's default branch is {v} now.",
              "We merge into {v}, the monorepo's default branch."]),
    # ---- facts that never change -----------------------------------------------------
    dict(id="license", values=["MIT"], questions=["What license is the SDK released under?"],
         say=["The SDK is released under the {v} license.", "Our SDK uses the {v} license."]),
    dict(id="errors", values=["Sentry"], questions=["What do we use for error tracking?"],
         say=["Error tracking goes through {v}.", "We track errors with {v}."]),
    dict(id="mobile_lang", values=["Kotlin"], questions=["What language is the Android app written in?"],
         say=["The Android app is written in {v}.", "Our Android app is built in {v}."]),
    dict(id="dns", values=["Cloudflare"], questions=["Who manages our DNS?"],
         say=["Our DNS is managed by {v}.", "DNS lives in {v}."]),
    dict(id="design_system", values=["Aurora"], questions=["What is the design system called?"],
         say=["The design system is called {v}.", "Our design system's name is {v}."]),
    dict(id="support", values=["Zendesk"], questions=["Which tool does customer support use?"],
         say=["Customer support works in {v}.", "Support tickets are handled in {v}."]),
    dict(id="hq", values=["Lisbon"], questions=["Where is the company headquartered?"],
         say=["The company is headquartered in {v}.", "Our headquarters are in {v}."]),
    dict(id="analytics", values=["Metabase"], questions=["What do we use for analytics dashboards?"],
         say=["Analytics dashboards are built in {v}.", "We use {v} for analytics dashboards."]),
    dict(id="docs_tool", values=["MkDocs"], questions=["What builds the documentation site?"],
         say=["The documentation site is built with {v}.", "We generate the docs site with {v}."]),
    dict(id="secrets", values=["Vault"], questions=["Where are production secrets stored?"],
         say=["Production secrets are stored in {v}.", "We keep production secrets in {v}."]),
    dict(id="retro", values=["Friday"], questions=["When is the sprint retrospective?"],
         say=["The sprint retrospective is on {v} afternoon.", "We hold the retro every other {v}."]),
    dict(id="billing_owner", values=["Omar"], questions=["Who owns the billing service?"],
         say=["{v} owns the billing service.", "The billing service is owned by {v}."]),
    dict(id="payments_provider", values=["Stripe"], questions=["Which payment provider do we use?"],
         say=["Payments are processed by {v}.", "We use {v} to process payments."]),
    dict(id="mobile_release", values=["every four weeks"], questions=["How often does the mobile app ship?"],
         say=["The mobile app ships {v}.", "We release the mobile app {v}."]),
    dict(id="orm", values=["SQLAlchemy"], questions=["Which ORM does the backend use?"],
         say=["The backend uses {v} as its ORM.", "Our ORM in the backend is {v}."]),
    # ---- distractors: sound like a changing fact, are another fact, never change -----
    dict(id="staging_db", twin="prod_db", values=["PostgreSQL 14"],
         questions=["Which database version does staging run?"],
         say=["The staging database runs {v}.", "Staging is on {v}.", "The staging database is {v}."]),
    dict(id="docs_port", twin="dev_port", values=["8000"], questions=["What port does the docs server use?"],
         say=["The docs server runs on port {v}.", "The docs server listens on port {v}."]),
    dict(id="planning", twin="standup", values=["11:00"], questions=["What time is sprint planning?"],
         say=["Sprint planning is at {v} on Mondays.", "Our sprint planning starts at {v}."]),
    dict(id="pipeline_python", twin="python", values=["Python 3.10"],
         questions=["Which Python version does the data pipeline use?"],
         say=["The data pipeline runs on {v}.", "The data pipeline is on {v}."]),
    dict(id="admin_react", twin="react", values=["React 16"],
         questions=["Which React version does the admin panel use?"],
         say=["The admin panel uses {v}.", "The admin panel is built with {v}."]),
    dict(id="staging_deploy", twin="deploy_day", values=["Monday"], questions=["Which day is staging reset?"],
         say=["Staging is reset every {v}.", "We reset the staging environment on {v}."]),
    dict(id="mobile_lead", twin="backend_lead", values=["Kenji"], questions=["Who leads the mobile team?"],
         say=["The mobile team is led by {v}.", "{v} leads the mobile team."]),
    dict(id="session_ttl", twin="cache_ttl", values=["12 hours"], questions=["How long do user sessions last?"],
         say=["User sessions expire after {v}.", "The user session TTL is {v}."]),
    dict(id="internal_rate", twin="rate_limit", values=["1000"], questions=["What is the internal API rate limit?"],
         say=["The internal API rate limit is {v} requests per minute.",
              "The internal API allows {v} requests per minute."]),
    dict(id="avatar_upload", twin="upload", values=["2 MB"], questions=["What is the maximum avatar size?"],
         say=["Avatars can be at most {v}.", "The maximum avatar size is {v}."]),
    dict(id="audit_logs", twin="logs", values=["S3"], questions=["Where are audit logs archived?"],
         say=["Audit logs are archived in {v}.", "We archive audit logs to {v}."]),
    dict(id="search_oncall", twin="oncall", values=["Nadia"], questions=["Who is on call for the search service?"],
         say=["{v} is on call for the search service.", "The search service on-call is {v}."]),
    dict(id="dr_region", twin="region", values=["Stockholm"], questions=["Where is the disaster recovery cluster?"],
         say=["The disaster recovery cluster is hosted in {v}.", "Our disaster recovery cluster runs in {v}."]),
    dict(id="mobile_pm", twin="pm", values=["Ines"], questions=["Who is the product manager for the mobile app?"],
         say=["The product manager for the mobile app is {v}.", "{v} is the mobile app's product manager."]),
    dict(id="analytics_queue", twin="queue", values=["Kinesis"], questions=["What streams the analytics events?"],
         say=["Analytics events stream through {v}.", "We stream analytics events with {v}."]),
]  # fmt: skip


def category(fact: dict[str, Any]) -> str:
    if "twin" in fact:
        return "distractor"
    return "changed" if len(fact["values"]) > 1 else "stable"


def generate(seed: int = SEED, sessions: int = SESSIONS) -> dict[str, Any]:
    """The whole scenario as plain JSON-ready data; the same seed gives the same result."""
    rng = random.Random(seed)
    dates = []
    day = START
    for _ in range(sessions):
        dates.append(day)
        day += timedelta(days=7 + rng.randint(-1, 1), hours=rng.randint(0, 6))
    plan: list[list[dict[str, Any]]] = [[] for _ in range(sessions)]
    facts_out = []
    for fact in FACTS:
        values, says = fact["values"], fact["say"]
        cat = category(fact)
        # when each value is first stated: the first early, each change a few sessions later
        starts = [rng.randint(0, 3)]
        for n in range(1, len(values)):
            room = sessions - 1 - starts[-1] - (len(values) - 1 - n) * 2
            starts.append(starts[-1] + rng.randint(2, max(2, min(room, 6))))
        timeline = []
        for n, (value, at) in enumerate(zip(values, starts, strict=True)):
            # the first value is said in the first way; a change in a way that speaks of the present
            first = says[0] if n == 0 else says[1 + rng.randrange(len(says) - 1)] if len(says) > 1 else says[0]
            plan[at].append({"fact": fact["id"], "value": value, "text": first.format(v=value), "change": n > 0})
            timeline.append({"session": at, "value": value})
            end = starts[n + 1] if n + 1 < len(starts) else sessions
            # restatements of the value while it holds: sometimes the same words, sometimes others
            for later in range(at + 1, end):
                if rng.random() < (0.18 if cat == "changed" else 0.15):
                    text = rng.choice(says).format(v=value)
                    plan[later].append({"fact": fact["id"], "value": value, "text": text, "change": False})
        facts_out.append(
            {
                "id": fact["id"],
                "category": cat,
                "twin": fact.get("twin"),
                "questions": fact["questions"],
                "current": values[-1],
                "dead": values[:-1],
                "timeline": timeline,
            }
        )
    out_sessions = []
    for i, claims in enumerate(plan):
        rng.shuffle(claims)
        out_sessions.append({"index": i, "date": dates[i].isoformat(), "claims": claims})
    claims_total = sum(len(s["claims"]) for s in out_sessions)
    return {
        "seed": seed,
        "description": "a software project's history of claims, generated by benchmarks/factgen.py",
        "counts": {
            "sessions": sessions,
            "claims": claims_total,
            "changes": sum(1 for s in out_sessions for c in s["claims"] if c["change"]),
            "facts": {c: sum(1 for f in facts_out if f["category"] == c) for c in ("changed", "stable", "distractor")},
            "days": (dates[-1] - dates[0]).days,
        },
        "facts": facts_out,
        "sessions": out_sessions,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.factgen", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    data = generate(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{args.out}: {json.dumps(data['counts'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
