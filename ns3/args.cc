#include "args.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace linklab_ns3
{

void Die(const std::string& message, int code)
{
    std::fprintf(stderr, "linklab-ns3: %s\n", message.c_str());
    std::exit(code);
}

std::vector<std::string> Split(const std::string& text, char sep)
{
    std::vector<std::string> out;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, sep))
    {
        out.push_back(item);
    }
    return out;
}

double Number(const std::string& text, const std::string& what)
{
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
    {
        Die(what + ": '" + text + "' is not a number");
    }
    return value;
}

void ForEachOption(const std::vector<std::string>& args,
                   const std::function<bool(const std::string&, const std::string&)>& take)
{
    for (size_t i = 0; i < args.size(); i++)
    {
        const std::string& a = args[i];
        if (i + 1 >= args.size())
        {
            Die(a + " needs a value");
        }
        const std::string& v = args[++i];
        if (!take(a, v))
        {
            Die("unknown option " + a);
        }
    }
}

} // namespace linklab_ns3
