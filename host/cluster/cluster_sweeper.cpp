#include "cluster/cluster_sweeper.hpp"

#include "cluster/cluster_network.hpp"
#include "cluster/cluster_owner.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/mpi_access.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace gradsweep::cluster {
namespace fs = std::filesystem;

namespace {

// "gsc-<name>-n0" -> "<name>"; "" for a name that is not one of ours.
std::string cluster_of_object(const std::string& object) {
  const std::string prefix = kPrefix;
  if (object.rfind(prefix, 0) != 0) return "";
  const std::size_t dash = object.find('-', prefix.size());
  return dash == std::string::npos ? "" : object.substr(prefix.size(), dash - prefix.size());
}

}  // namespace

std::vector<std::string> find_leftovers() {
  std::set<std::string> names;
  const NetworkObjects objects = find_objects(kPrefix);
  for (const auto* list : {&objects.namespaces, &objects.links})
    for (const std::string& o : *list) names.insert(cluster_of_object(o));
  for (const std::string& n : clusters_in_hosts_file()) names.insert(n);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_root(), ec))
    if (entry.is_directory()) names.insert(entry.path().filename().string());
  names.erase("");
  std::vector<std::string> leftovers;
  for (const std::string& n : names)
    if (!fs::exists(state_dir(n) / "cluster.json") || owner_gone(n)) leftovers.push_back(n);
  return leftovers;
}

std::vector<std::string> remove_cluster(const std::string& name) {
  // The state file goes first: a `down` killed midway then leaves a leftover that the sweeper finds,
  // never a cluster that claims to be up with half its nodes gone.
  std::error_code gone;
  fs::remove(state_dir(name) / "cluster.json", gone);
  std::vector<std::string> problems = remove_objects(std::string(kPrefix) + name + "-");
  try {
    remove_host_entries(name);
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }
  forget_owner(name);
  std::error_code ec;
  fs::remove_all(state_dir(name), ec);
  if (ec) problems.push_back(state_dir(name).string() + ": " + ec.message());
  return problems;
}

std::vector<std::string> sweep_leftovers() {
  const std::vector<std::string> leftovers = find_leftovers();
  for (const std::string& name : leftovers) {
    const std::vector<std::string> problems = remove_cluster(name);
    if (!problems.empty())
      throw std::runtime_error("cannot remove the leftovers of cluster '" + name + "': " + problems.front());
  }
  return leftovers;
}

}  // namespace gradsweep::cluster
