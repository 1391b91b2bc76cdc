#pragma once
// The link straggler: which node's network link is slow, measured rather than inferred from step times.
// The step breakdown's straggler index (timeline.hpp) compares the ranks' work (compute), so a node with a
// slow link is not seen there: its slowness lands in every rank's exposed communication alike, since a ring
// or tree collective runs at the pace of its slowest link on every rank.
//
// So at the end of a run (after the last step, outside every measured figure) each node's leader (its first
// rank; nodes are told apart by host name) times a point-to-point transfer with each of its two neighbours
// in the ring of nodes, in both directions. A slow link slows every transfer into and out of its node, while
// a fast node next to a slow one has one slow pair and one fast one; so a node's figure is the *faster* of its
// two pairs (a pair counting its slower direction), and only the node whose own link is slow has a slow
// figure. link_straggler_index = the slowest node's figure over the median node's (1.0 = even links).
//
// Cost: 256 KiB per transfer (above a few packets, so that a rate rather than a round trip is timed; within
// the 10 ms burst of tc's bucket on a fast emulated link), two tries per direction (the faster kept, against
// scheduling noise), pairs that share no node at once: 3 rounds of 2 x 2 transfers whatever the node count
// (2 rounds when it is even). Fewer than 3 nodes: no probe (two nodes' pairs are the same pair: nothing to
// tell apart), the fields are null.
#include "comm/core/host_communicator.hpp"

#include <nlohmann/json.hpp>

namespace gradsweep::train {

// Every rank calls it at the same point. Returns summary.json's step_breakdown fields:
// "link_straggler_index", "slow_link_rank", "slow_link_host" (null under 3 nodes) and "link_probe":
// {"nodes", "bytes", "seconds" (the probe's own wall time), "by_node": {"host": [...], "rank": [...],
// "seconds": [...]}} (node-major lists: each node's host name, first rank and figure).
nlohmann::json probe_links(comm::HostCommunicator& comm);

}  // namespace gradsweep::train
