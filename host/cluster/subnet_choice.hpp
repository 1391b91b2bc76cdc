// Which 10.213.K.0/24 a new cluster gets: one no other cluster holds and that overlaps no address or route
// of this machine (a 10.0.0.0/8 route means real hosts may live there: a local /24 would hide them).
#pragma once

#include <string>
#include <vector>

namespace gradsweep::cluster {

// `taken`: subnet indices of the clusters that are up. `ip_output`: `ip -4 -o addr show` and
// `ip -4 route show` together; every IPv4 address or prefix in it (not "default") counts as in use.
// Returns K in 1..254, or -1 when none is free.
int choose_subnet(const std::vector<int>& taken, const std::string& ip_output);

}  // namespace gradsweep::cluster
