"""How the offline model's agent replies follow the procedures in its system prompt.

``offline_model.chat_reply`` builds a reply from the last user message and the
procedures listed under ``LEARNED OPERATIONAL PROCEDURES``. Each listed procedure is read
for what it asks (``ACTIONS``: cue words in its title and description), and the reply
does it, so a procedure in the prompt really changes what a checker sees:

- ``emergency_fund`` ("emergency fund"): the reply opens with the emergency-fund check;
- ``worst_case`` ("worst"): a worst-case line with a number (2 % of the amount named);
- ``action_list`` ("numbered", "next steps", "action list"): a ``Next steps:`` list of three;
- ``no_stocks`` ("stock" with "never"/"avoid"/"no"): no company is named;
- ``brief`` ("brief", "120 words", "concise"): the long background paragraph is left out.

Each listed procedure also gets one line naming it (``N. Following '<title>'.``), so a
crowded prompt still lengthens the reply a little.

Without them the reply does what an unguided model plausibly does with the user's words
(``topic_lines``): names companies when asked about stocks, says the worst case
"depends" without a number, gives a vague next step, and explains at length when asked
to explain or compare. Deterministic: the same request gives the same reply.
"""

from __future__ import annotations

import re

ACTIONS: dict[str, tuple[str, ...]] = {
    "emergency_fund": ("emergency fund",),
    "worst_case": ("worst",),
    "action_list": ("numbered", "next steps", "action list"),
    "no_stocks": ("stock",),
    "brief": ("brief", "120 words", "concise"),
}
NEGATIONS = ("never", "avoid", "no ", "not ")
STOCKS = "Reliance Industries, TCS or HDFC Bank"
LONG_CUES = ("explain", "compare", "all my options", "in detail", "difference")
STOCK_CUES = ("stock", "shares", "equity", "company to buy")
WORST_CUES = ("worst", "lose", "losing")
NEXT_CUES = ("next", "list", "what should i do", "steps", "plan")


def procedure_actions(procedures: list[tuple[str, str]]) -> set[str]:
    """The actions (``ACTIONS``) the listed ``(title, description)`` procedures ask for."""
    found = set()
    for title, description in procedures:
        text = f"{title} {description}".lower()
        for action, cues in ACTIONS.items():
            if not any(c in text for c in cues):
                continue
            if action == "no_stocks" and not any(n in f"{text} " for n in NEGATIONS):
                continue
            found.add(action)
    return found


def _amount(text: str) -> int | None:
    match = re.search(r"₹\s?([\d,]+)", text)
    if match is None:
        return None
    digits = match.group(1).replace(",", "")
    return int(digits) if digits.isdigit() else None


def topic_lines(user: str, actions: set[str]) -> list[str]:
    """The body of the reply for the user's last message, shaped by ``actions``."""
    low = user.lower()
    lines = []
    if any(c in low for c in STOCK_CUES):
        if "no_stocks" in actions:
            lines.append("A diversified index fund spreads your money instead of one bet.")
        else:
            lines.append(f"Many investors start with large companies such as {STOCKS}.")
    if any(c in low for c in LONG_CUES) and "brief" not in actions:
        lines.append(
            "To explain the background properly: a fixed deposit locks your money for a "
            "term at a known rate and is covered by deposit insurance up to a limit; a "
            "liquid fund invests in very short money-market paper and lets you withdraw "
            "within a day; a short-term debt fund holds bonds of one to three years and can "
            "move with interest rates and credit events; an index fund follows the market "
            "and can fall sharply in a bad year; gold and real estate behave differently "
            "again, and each option is taxed in its own way, which matters over time; keep "
            "a record of every investment for your tax return, and ask a fee-only adviser "
            "whenever a product's costs or lock-in are unclear to you."
        )
    if "worst_case" in actions:
        amount = _amount(user) or 50000
        loss = max(1, round(0.02 * amount))
        lines.append(
            f"Worst case: a short-term debt fund can lose about 2% in a bad year, "
            f"about ₹{loss:,} on ₹{amount:,}."
        )
    elif any(c in low for c in WORST_CUES):
        lines.append("The worst case depends on the fund and on the market.")
    if "action_list" in actions:
        lines.append(
            "Next steps:\n1. Confirm your emergency fund.\n2. Pick the option that fits "
            "when you need the money.\n3. Review it once a year."
        )
    elif any(c in low for c in NEXT_CUES):
        lines.append("Start with the safest option and review it later.")
    return lines


EMERGENCY_LINE = (
    "First, check your emergency fund: keep 3-6 months of expenses in cash before any "
    "new investment."
)
