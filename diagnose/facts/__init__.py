"""Evidence -> named facts -> symptoms with confidence and plain-words evidence.

``extract_facts(report)`` gives the flat dict the rules are evaluated on (documented in
``diagnose.facts.catalog.FACTS``); ``detect_symptoms(facts, report)`` names what went wrong.
"""

from diagnose.facts.catalog import FACTS
from diagnose.facts.extract import Facts, extract_facts
from diagnose.facts.symptoms import TITLES, detect_symptoms

__all__ = ["FACTS", "TITLES", "Facts", "detect_symptoms", "extract_facts"]
