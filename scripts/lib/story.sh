# shellcheck shell=bash
# gpufair's PriorityParameters for the time-compressed story that scripts/demo
# and the end-to-end tests run on the 4 x 8-GPU cluster (1 story hour = 6 s).
# The rule is the default one: every key of the rule (bait_*, penalty_*,
# jump_price_cap, scavenger_window, reclaim, banked_jump) keeps its default,
# only its durations are scaled to story time (bait_young 2 h = 12 s,
# bait_window and penalty_half_life 1 d = 144 s, bait_skip_norm 1 h = 6 s,
# jump_price_cap 4 h = 24 s, scavenger_window 1 d = 144 s). The standard knobs
# are the baselines' (scripts/cluster: PriorityDecayHalfLife=5,
# PriorityMaxAge=1): half_life 5 min, max_age 60 s, and a cycle every 2 s;
# gpu4's a100s count double.
GPUFAIR_STORY_PARAMS="half_life=5m,calc_period=2s,max_age=60s,bait_young=12s,bait_window=144s,bait_skip_norm=6s,penalty_half_life=144s,jump_price_cap=24s,scavenger_window=144s,gpu_weight:a100=2"
