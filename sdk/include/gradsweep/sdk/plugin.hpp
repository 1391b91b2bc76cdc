#pragma once
// Everything a plugin author includes, and the macros that export a plugin.
//
//   #include <gradsweep/sdk/plugin.hpp>
//   class MyStrategy : public gradsweep::sdk::Strategy { ... };
//   constexpr std::array<gradsweep::sdk::OptionSpec, 1> kOptions{{
//       {"bucket_mb", gradsweep::sdk::OptionType::Float, "25", "fusion bucket size in MiB"}}};
//   GRADSWEEP_STRATEGY_PLUGIN("mine", "1.0.0", "what it does, in one line", MyStrategy, kOptions)
//
// The class needs a constructor taking `const gradsweep::sdk::PluginContext&`. It may also declare its
// capabilities, a plan check and option choices (capabilities.hpp); the macro finds them.
#include <gradsweep/sdk/abi.hpp>
#include <gradsweep/sdk/build_fingerprint.hpp>
#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/options.hpp>
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <boost/dll/alias.hpp>

#include <array>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace gradsweep::sdk::detail {

template <PluginKind K>
struct InterfaceOf;
template <>
struct InterfaceOf<PluginKind::Model> {
  using type = ModelAbi;
};
template <>
struct InterfaceOf<PluginKind::Strategy> {
  using type = StrategyAbi;
};

// create/destroy for one class. The object is handed out as a pointer to its boundary interface, so the
// host's cast back from void* is exact, and is deleted here, by the code that allocated it.
template <PluginKind K, class Class>
struct Factory {
  using Interface = typename InterfaceOf<K>::type;
  static void* create(const PluginContext* context, Status* status) noexcept {
    Interface* object = nullptr;
    *status = guard([&] { object = new Class(*context); });
    return static_cast<void*>(object);
  }
  static void destroy(void* object) noexcept { delete static_cast<Class*>(static_cast<Interface*>(object)); }
};

// What a class declares (capabilities.hpp), found by SFINAE so that a class declaring nothing still builds.
template <class C, class = void>
struct DeclaresCapabilities : std::false_type {};
template <class C>
struct DeclaresCapabilities<C, std::void_t<decltype(C::kCapabilities)>> : std::true_type {};
template <class C, class = void>
struct DeclaresPlanCheck : std::false_type {};
template <class C>
struct DeclaresPlanCheck<
    C, std::void_t<decltype(C::check_plan(std::declval<const PlanFacts&>(), std::declval<PlanAnswer&>()))>>
    : std::true_type {};

template <class C>
constexpr const StrategyCapabilities* capabilities_of() {
  if constexpr (DeclaresCapabilities<C>::value) {
    static_assert(std::is_same_v<std::decay_t<decltype(C::kCapabilities)>, StrategyCapabilities>,
                  "kCapabilities must be a gradsweep::sdk::StrategyCapabilities");
    return &C::kCapabilities;
  } else {
    return nullptr;
  }
}

// The boundary's noexcept form of C::check_plan: an exception is the refusal.
template <class C>
Status check_plan_trampoline(const PlanFacts* facts, PlanAnswer* answer) noexcept {
  return guard([&] { C::check_plan(*facts, *answer); });
}

template <class C>
constexpr Status (*check_plan_of())(const PlanFacts*, PlanAnswer*) noexcept {
  if constexpr (DeclaresPlanCheck<C>::value)
    return &check_plan_trampoline<C>;
  else
    return nullptr;
}

// A plugin's option list, as OptionSpec (written so) or OptionDecl (with choices): the descriptor's
// options and its parallel choices, split at compile time.
template <std::size_t N>
constexpr std::array<OptionSpec, N> option_specs(const std::array<OptionSpec, N>& options) {
  return options;
}
template <std::size_t N>
constexpr std::array<OptionSpec, N> option_specs(const std::array<OptionDecl, N>& options) {
  std::array<OptionSpec, N> specs{};
  for (std::size_t i = 0; i < N; ++i) specs[i] = options[i].spec();
  return specs;
}
template <std::size_t N>
constexpr std::array<const char*, N> option_choices(const std::array<OptionSpec, N>&) {
  return {};
}
template <std::size_t N>
constexpr std::array<const char*, N> option_choices(const std::array<OptionDecl, N>& options) {
  std::array<const char*, N> choices{};
  for (std::size_t i = 0; i < N; ++i) choices[i] = options[i].choices;
  return choices;
}

}  // namespace gradsweep::sdk::detail

// The general form: tests use it to build plugins with a deliberately wrong ABI version or fingerprint.
#define GRADSWEEP_PLUGIN_WITH(KIND, NAME, VERSION, SUMMARY, CLASS, OPTIONS, ABI_MAJOR, ABI_MINOR, BUILD) \
  namespace {                                                                                            \
  using gradsweep_factory_ = ::gradsweep::sdk::detail::Factory<KIND, CLASS>;                             \
  constexpr auto gradsweep_options_ = ::gradsweep::sdk::detail::option_specs(OPTIONS);                   \
  constexpr auto gradsweep_choices_ = ::gradsweep::sdk::detail::option_choices(OPTIONS);                 \
  const ::gradsweep::sdk::PluginDescriptor gradsweep_descriptor_{                                        \
      sizeof(::gradsweep::sdk::PluginDescriptor),                                                        \
      (ABI_MAJOR),                                                                                       \
      (ABI_MINOR),                                                                                       \
      (KIND),                                                                                            \
      (NAME),                                                                                            \
      (VERSION),                                                                                         \
      (SUMMARY),                                                                                         \
      (BUILD),                                                                                           \
      gradsweep_options_.data(),                                                                         \
      static_cast<std::uint32_t>(gradsweep_options_.size()),                                             \
      &gradsweep_factory_::create,                                                                       \
      &gradsweep_factory_::destroy,                                                                      \
      ::gradsweep::sdk::detail::capabilities_of<CLASS>(),                                                \
      ::gradsweep::sdk::detail::check_plan_of<CLASS>(),                                                  \
      gradsweep_choices_.data()};                                                                        \
  const ::gradsweep::sdk::PluginDescriptor* gradsweep_describe_() { return &gradsweep_descriptor_; }     \
  }                                                                                                      \
  BOOST_DLL_ALIAS(gradsweep_describe_, gradsweep_plugin)

#define GRADSWEEP_PLUGIN(KIND, NAME, VERSION, SUMMARY, CLASS, OPTIONS)                             \
  GRADSWEEP_PLUGIN_WITH(KIND, NAME, VERSION, SUMMARY, CLASS, OPTIONS, ::gradsweep::sdk::kAbiMajor, \
                        ::gradsweep::sdk::kAbiMinor, ::gradsweep::sdk::detail::this_build())

#define GRADSWEEP_MODEL_PLUGIN(NAME, VERSION, SUMMARY, CLASS, OPTIONS) \
  GRADSWEEP_PLUGIN(::gradsweep::sdk::PluginKind::Model, NAME, VERSION, SUMMARY, CLASS, OPTIONS)

#define GRADSWEEP_STRATEGY_PLUGIN(NAME, VERSION, SUMMARY, CLASS, OPTIONS) \
  GRADSWEEP_PLUGIN(::gradsweep::sdk::PluginKind::Strategy, NAME, VERSION, SUMMARY, CLASS, OPTIONS)
