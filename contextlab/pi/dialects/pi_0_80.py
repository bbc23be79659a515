"""Pi 0.80.x (npm @earendil-works/pi-coding-agent@0.80.2): XML project context, date line."""

from __future__ import annotations

from contextlab.pi.dialects import pi_0_80_data as data
from contextlab.pi.dialects.base import Dialect

PI_0_80 = Dialect(
    version="0.80.2",
    compaction_summary_prefix=data.COMPACTION_SUMMARY_PREFIX,
    compaction_summary_suffix=data.COMPACTION_SUMMARY_SUFFIX,
    branch_summary_prefix=data.BRANCH_SUMMARY_PREFIX,
    branch_summary_suffix=data.BRANCH_SUMMARY_SUFFIX,
    summarization_system_prompt=data.SUMMARIZATION_SYSTEM_PROMPT,
    summarization_prompt=data.SUMMARIZATION_PROMPT,
    update_summarization_prompt=data.UPDATE_SUMMARIZATION_PROMPT,
    turn_prefix_summarization_prompt=data.TURN_PREFIX_SUMMARIZATION_PROMPT,
    branch_summary_preamble=data.BRANCH_SUMMARY_PREAMBLE,
    branch_summary_prompt=data.BRANCH_SUMMARY_PROMPT,
    tools=tuple(data.TOOLS),
)
