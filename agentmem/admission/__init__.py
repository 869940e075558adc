"""Admission: what in conversations, notes and source trees may become a memory, of which kind, from where.

extract       sentences -> candidate claims (identity, preference, decision, config, project, habit)
policy        the screens and the fixed rejection reasons
conversation  session files (JSON, JSON Lines) and which messages count
notes         Markdown as an intent view: headings and the statements under them
code          declarations and their documentation (Python, JavaScript, TypeScript)
files         walking a tree: what is skipped and why
scan          one scan: verdicts, the remember path, the audit record
"""

from agentmem.admission.conversation import Conversation, Message
from agentmem.admission.extract import Candidate, propose
from agentmem.admission.policy import REASONS, Reason
from agentmem.admission.scan import ScanItem, ScanReport, ingest_code, ingest_conversation, ingest_notes

__all__ = [
    "REASONS",
    "Candidate",
    "Conversation",
    "Message",
    "Reason",
    "ScanItem",
    "ScanReport",
    "ingest_code",
    "ingest_conversation",
    "ingest_notes",
    "propose",
]
