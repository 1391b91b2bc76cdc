// How Open MPI reaches a cluster's nodes: an rsh agent that runs orted inside the namespace named after the
// host, a hostfile of those names with ranks_per_node slots each, /etc/hosts entries that resolve them,
// and the MCA settings that keep MPI's traffic on the cluster's subnet (TCP between nodes, shared memory
// within one).
#pragma once

#include "cluster/cluster_spec.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gradsweep::cluster {

std::filesystem::path agent_path(const ClusterSpec& spec);
std::filesystem::path hostfile_path(const ClusterSpec& spec);

// Writes the agent and the hostfile into the cluster's state directory and adds its /etc/hosts entries.
void write_mpi_access(const ClusterSpec& spec);
// Removes the /etc/hosts entries of the cluster named `name` (all of gradsweep's when `name` is empty).
void remove_host_entries(const std::string& name);
// Names of the clusters that have entries in /etc/hosts.
std::vector<std::string> clusters_in_hosts_file();

// `mpirun` arguments that put a job on the cluster: --hostfile, --mca plm_rsh_agent, btl, if_include.
std::vector<std::string> mpirun_arguments(const ClusterSpec& spec);
// The same settings as OMPI_MCA_* variables, for `cluster exec` (a plain `mpirun -np N ...` then lands
// on the cluster), plus GRADSWEEP_CLUSTER* for the ranks' own provenance.
std::map<std::string, std::string> mpirun_environment(const ClusterSpec& spec);

}  // namespace gradsweep::cluster
