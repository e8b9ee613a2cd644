// SPDX-License-Identifier: GPL-3.0-or-later
#include "teaching/seedtables.h"

#include <string>
#include <vector>

namespace attnviz::ui {

namespace {

std::shared_ptr<const EmbeddingTable> makeTable(std::vector<std::string> words, std::vector<float> values,
                                                std::string source)
{
    const int dim = int(values.size() / words.size());
    Mat<float> m(int(words.size()), dim);
    for (int i = 0; i < m.rows(); ++i)
        for (int j = 0; j < dim; ++j)
            m(i, j) = values[size_t(i * dim + j)];
    auto t = std::make_shared<EmbeddingTable>();
    t->assign(std::move(words), std::move(m), std::move(source));
    return t;
}

} // namespace

std::shared_ptr<const EmbeddingTable> journeyTable()
{
    static const auto t = makeTable({"your", "journey", "starts", "with", "one", "step"},
                                    {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f, 0.57f, 0.85f, 0.64f,
                                     0.22f, 0.58f, 0.33f, 0.77f, 0.25f, 0.10f, 0.05f, 0.80f, 0.55f},
                                    "journey (seed 001)");
    return t;
}

QString journeySentence() { return QStringLiteral("Your journey starts with one step"); }

std::shared_ptr<const EmbeddingTable> bloemTable()
{
    static const auto t = makeTable({"x1", "x2", "x3"},
                                    {-0.6576f, -0.0910f, 0.6779f, 1.7254f, 0.7237f, -0.8033f, 0.9599f, -1.4178f,
                                     -0.3415f, -0.3925f, -0.8440f, 0.2096f},
                                    "x (seed 002)");
    return t;
}

QString bloemSentence() { return QStringLiteral("x1 x2 x3"); }

} // namespace attnviz::ui
