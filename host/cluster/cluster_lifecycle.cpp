#include "cluster/cluster_lifecycle.hpp"

#include "cluster/cluster_lock.hpp"
#include "cluster/cluster_network.hpp"
#include "cluster/cluster_sweeper.hpp"
#include "cluster/mpi_access.hpp"
#include "cluster/subnet_choice.hpp"
#include "cluster/system_command.hpp"
#include "util/atomic_file.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace gradsweep::cluster {
namespace fs = std::filesystem;
namespace {

bool name_in_use(const std::string& name) {
  return fs::exists(state_dir(name)) || !find_objects(std::string(kPrefix) + name + "-").empty();
}

std::string free_name() {
  for (int k = 0; k < 1000; ++k)
    if (!name_in_use("c" + std::to_string(k))) return "c" + std::to_string(k);
  throw std::runtime_error("cluster up: no free cluster name c0..c999; pass --name");
}

int free_subnet() {
  std::vector<int> taken;
  for (const std::string& name : clusters_up()) taken.push_back(load_cluster(name).subnet_index);
  const int k = choose_subnet(taken, root_addresses_and_routes());
  if (k < 0)
    throw std::runtime_error(
        "cluster up: every subnet 10.213.1-254.0/24 is taken or overlaps a network of this "
        "machine; bring a cluster down first");
  return k;
}

}  // namespace

ClusterSpec bring_up(ClusterSpec spec, std::unique_ptr<OwnerLock>* owner, const fs::path& owner_lock_file) {
  require_network_admin("cluster up");
  if (!spec.name.empty()) validate_name(spec.name);
  ClusterLock lock;
  sweep_leftovers();
  if (spec.name.empty()) spec.name = free_name();
  validate(spec);
  if (fs::exists(state_dir(spec.name) / "cluster.json"))
    throw std::runtime_error("--name: cluster '" + spec.name + "' is already up; `gradsweep cluster down " + spec.name +
                             "` first, or pick another name");
  spec.subnet_index = free_subnet();
  fs::create_directories(state_dir(spec.name));
  try {
    if (owner != nullptr) *owner = std::make_unique<OwnerLock>(spec.name);
    if (!owner_lock_file.empty()) record_owner(spec.name, owner_lock_file);
    create_network(spec);
    write_mpi_access(spec);
    util::write_file_atomically(state_dir(spec.name) / "cluster.json", to_json(spec).dump(2) + "\n");
  } catch (...) {
    remove_cluster(spec.name);
    if (owner != nullptr) owner->reset();
    throw;
  }
  return spec;
}

void bring_down(const std::string& name) {
  validate_name(name);
  require_network_admin("cluster down");
  ClusterLock lock;
  const std::vector<std::string> leftovers = find_leftovers();
  const bool leftover = std::find(leftovers.begin(), leftovers.end(), name) != leftovers.end();
  if (!fs::exists(state_dir(name) / "cluster.json") && !leftover)
    throw std::runtime_error("cluster down: there is no cluster '" + name + "' (see `gradsweep cluster list`)");
  const std::vector<std::string> problems = remove_cluster(name);
  if (!problems.empty()) {
    std::string message = "cluster down " + name + ": some objects would not go";
    for (const std::string& p : problems) message += "; " + p;
    throw std::runtime_error(message);
  }
}

}  // namespace gradsweep::cluster
