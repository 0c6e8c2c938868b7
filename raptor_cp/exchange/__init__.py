"""The IPU exchange domain (the seed "Exchange footprint model").

* `plan`: the `ExchangePlan` (supersteps, payloads, addresses; rows and numpy columns);
* `plan_json`: its JSON form, what ``raptor-cp exchange`` reads and ``compile`` writes;
* `planning`: the plan of a latency schedule on a bulk-synchronous target;
* `footprint`: the cheap per-tile exchange-table estimate;
* `encoder`: the exact table encoder, the only judge of a budget;
* `candidates`: the candidate plans of one workload (lanes, block and tile budgets);
* `admission`: budget-aware ranking and shortlists until the encoder admits a plan;
* `exhaustive`: every candidate placed and encoded, the reference admission is checked on.
"""
