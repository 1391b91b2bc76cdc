#pragma once
// An object created by a plugin, owned by the host, destroyed by the plugin's own destroy function, and
// called only through `call`: it knows (abi_methods.hpp) which SDK minor appended each method, so a
// method the plugin's SDK lacks is never called, and a failed Status becomes an exception naming the
// plugin and the method.
//
//   strategy.call<&sdk::StrategyAbi::setup>(setup);                     // every minor has it
//   if (!strategy.call_if_present<&sdk::StrategyAbi::role>(&role)) ...  // 1.0: absent, nothing called
#include "plugins/abi_methods.hpp"
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsweep::plugins {

template <class Abi>
constexpr sdk::PluginKind kind_of();
template <>
constexpr sdk::PluginKind kind_of<sdk::ModelAbi>() {
  return sdk::PluginKind::Model;
}
template <>
constexpr sdk::PluginKind kind_of<sdk::StrategyAbi>() {
  return sdk::PluginKind::Strategy;
}

// Whether the plugin's SDK has `Method` (before creating an object of it: `gradsweep export` asks first).
template <auto Method>
bool plugin_has(const PluginRecord& record) {
  return record.descriptor->abi_minor >= AbiMethod<Method>::minor;
}

// "model plugin 'x' was built against SDK 1.4, which has no export_weights (SDK 1.5)".
template <auto Method>
std::string lacks_method(const PluginRecord& record) {
  return std::string(sdk::to_string(record.kind)) + " plugin '" + record.name + "' was built against SDK 1." +
         std::to_string(record.descriptor->abi_minor) + ", which has no " + AbiMethod<Method>::name + " (SDK 1." +
         std::to_string(AbiMethod<Method>::minor) + ")";
}

template <class Abi>
class PluginInstance {
 public:
  // `context` and everything it refers to must outlive the instance.
  PluginInstance(const PluginRecord& record, const sdk::PluginContext& context) : record_(&record) {
    if (record.kind != kind_of<Abi>())
      throw std::runtime_error("plugin '" + record.name + "' is a " + sdk::to_string(record.kind) + ", not a " +
                               sdk::to_string(kind_of<Abi>()));
    sdk::Status status;
    void* object = record.descriptor->create(&context, &status);
    if (!status.ok || object == nullptr)
      throw std::runtime_error(who() + ": " + (status.message.empty() ? "create failed" : status.message));
    object_ = static_cast<Abi*>(object);
  }
  ~PluginInstance() {
    if (object_ != nullptr) record_->descriptor->destroy(static_cast<void*>(object_));
  }
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  const PluginRecord& record() const { return *record_; }
  std::uint32_t abi_minor() const { return record_->descriptor->abi_minor; }

  // Whether the plugin's SDK has `Method`.
  template <auto Method>
  bool has() const {
    static_assert(std::is_same_v<typename AbiMethod<Method>::Interface, Abi>, "a method of another interface");
    return plugin_has<Method>(*record_);
  }

  // Calls `Method`; throws naming the plugin and the method when its SDK lacks it or the call fails.
  template <auto Method, class... Args>
  void call(Args&&... args) const {
    if (!has<Method>()) throw std::runtime_error(lacks_method<Method>(*record_));
    checked(AbiMethod<Method>::name, (object_->*Method)(std::forward<Args>(args)...));
  }

  // Calls `Method` when the plugin's SDK has it; false, and nothing called, when it does not.
  template <auto Method, class... Args>
  bool call_if_present(Args&&... args) const {
    if (!has<Method>()) return false;
    checked(AbiMethod<Method>::name, (object_->*Method)(std::forward<Args>(args)...));
    return true;
  }

  // Calls `Method` (it must be present: throws otherwise) and hands back its Status, for a caller whose
  // message names something else than the call (model.init_from's directory).
  template <auto Method, class... Args>
  sdk::Status status_of(Args&&... args) const {
    if (!has<Method>()) throw std::runtime_error(lacks_method<Method>(*record_));
    return (object_->*Method)(std::forward<Args>(args)...);
  }

  // The whole interface, for a plugin built against this very SDK (tests of in-tree plugins); throws for
  // an older one, whose vtable may end before the interface does.
  Abi& current() const {
    if (abi_minor() != sdk::kAbiMinor)
      throw std::runtime_error(who() + " was built against SDK 1." + std::to_string(abi_minor()) + ", not 1." +
                               std::to_string(sdk::kAbiMinor) + ": call it through PluginInstance::call");
    return *object_;
  }

 private:
  std::string who() const { return std::string(sdk::to_string(record_->kind)) + " '" + record_->name + "'"; }
  void checked(const char* method, const sdk::Status& status) const {
    if (!status.ok) throw std::runtime_error(who() + " " + method + ": " + status.message);
  }

  const PluginRecord* record_;
  Abi* object_ = nullptr;
};

using ModelInstance = PluginInstance<sdk::ModelAbi>;
using StrategyInstance = PluginInstance<sdk::StrategyAbi>;

}  // namespace gradsweep::plugins
