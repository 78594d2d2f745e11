// linklab-ns3's command line: fatal errors, comma lists, numbers, OPTION VALUE pairs.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace linklab_ns3
{

// Prints "linklab-ns3: MESSAGE" on stderr and exits with CODE.
[[noreturn]] void Die(const std::string& message, int code = 2);

std::vector<std::string> Split(const std::string& text, char sep);

// TEXT as a number; dies naming WHAT when it is not one.
double Number(const std::string& text, const std::string& what);

// Calls TAKE(option, value) for each OPTION VALUE pair of ARGS; TAKE returns false for an
// option it does not know (the program then dies), as does an option without a value.
void ForEachOption(const std::vector<std::string>& args,
                   const std::function<bool(const std::string&, const std::string&)>& take);

} // namespace linklab_ns3
