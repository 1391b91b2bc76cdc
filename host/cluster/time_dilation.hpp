// Time dilation (DieCast: Gupta et al., NSDI 2006 and 2008). N emulated nodes share this machine's cores,
// so each computes slower than a real node would, by a factor F; dividing the link rate by the same F
// keeps the communication-to-compute ratio of the real cluster. Every time measured on a dilated cluster
// is then F times the real cluster's (docs/cluster.md says how to read the figures).
#pragma once

#include <string>

namespace gradsweep::cluster {

// Parses --dilation: a number >= 1, or "auto" (returns 0: measure). Throws std::invalid_argument.
double parse_dilation(const std::string& text);

// The compute slowdown of `nodes` co-located nodes of `ranks_per_node` workers each against one node
// alone: a fixed single-threaded matrix-multiply loop timed on ranks_per_node threads, then on
// nodes x ranks_per_node threads at once; the ratio of the wall times, at least 1.
double measure_dilation(int nodes, int ranks_per_node);

}  // namespace gradsweep::cluster
