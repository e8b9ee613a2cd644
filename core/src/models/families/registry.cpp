// SPDX-License-Identifier: GPL-3.0-or-later
// The families attnviz reads, one row each (family.h). A new Llama-like family is one file beside
// this one (its config defaults and, where they differ, its tensor names) and one row here.
#include "family.h"

namespace attnviz::families {

const std::vector<Family> &registry()
{
    static const std::vector<Family> families{
        kGpt2, kBert, kDistilBert, kLlama, kMistral, kQwen2, kQwen3, kGemma2, kGemma3, kPhi3, kT5, kBart, kMBart, kMarian,
    };
    return families;
}

const Family *familyFor(const std::string &modelType)
{
    for (const Family &f : registry())
        for (const std::string &t : f.modelTypes)
            if (t == modelType)
                return &f;
    return nullptr;
}

const Family *familyNamed(const std::string &name)
{
    for (const Family &f : registry())
        if (name == f.name)
            return &f;
    return nullptr;
}

} // namespace attnviz::families
