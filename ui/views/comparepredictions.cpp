// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/comparepredictions.h"

#include "attnviz/reads.h"

#include <algorithm>

namespace attnviz::ui {

namespace {

// The next tokens after a snapshot's last token, best first; empty where the model predicts none.
NextTokens lastNext(const SnapshotPtr &s)
{
    NextTokens out;
    if (!s || !s->hasResult() || !s->model || !s->modelInfo.causal || !s->trace)
        return out;
    const Trace<float> &t = *s->trace;
    const int last = int(t.tokens.size()) - 1;
    if (last < 0)
        return out;
    if (size_t(last) < t.predictions.next.size() && !t.predictions.next[size_t(last)].empty()) {
        out.top = t.predictions.next[size_t(last)];
        if (size_t(last) < t.predictions.logNormalizer.size())
            out.logNormalizer = t.predictions.logNormalizer[size_t(last)];
        return out;
    }
    if (!s->model->nextTokens(t, last, out))
        out.top.clear();
    return out;
}

// The logit of `id` after the last token: from the top tokens where it is among them (log p plus the
// log normaliser), else its attribution's sum (the logit the softmax reads).
double logitOf(const SnapshotPtr &s, const NextTokens &next, int id)
{
    for (const TokenProb &p : next.top)
        if (p.id == id && p.p > 0 && std::isfinite(next.logNormalizer))
            return std::log(p.p) + next.logNormalizer;
    Attribution a;
    if (attribute(*s->model, *s->trace, int(s->trace->tokens.size()) - 1, id, a))
        return a.cappedLogit;
    return std::numeric_limits<double>::quiet_NaN();
}

QString shown(const TokenProb &p)
{
    return QString::fromStdString(p.display.empty() ? p.token : p.display).toHtmlEscaped();
}

QString signedValue(double v)
{
    return std::isfinite(v) ? QString::asprintf("%+.2f", v) : QStringLiteral("—");
}

} // namespace

ComparePredictions::ComparePredictions(QWidget *parent) : QLabel(parent)
{
    setObjectName(QStringLiteral("comparePredictions"));
    setTextFormat(Qt::RichText);
    setWordWrap(true);
    setVisible(false);
}

void ComparePredictions::setSnapshots(const SnapshotPtr &a, const SnapshotPtr &b)
{
    m_x = m_y = -1;
    m_diffA = m_diffB = std::numeric_limits<double>::quiet_NaN();
    const NextTokens na = lastNext(a), nb = lastNext(b);
    // one vocabulary on both sides, or no comparison of ids
    if (na.top.empty() || nb.top.empty() || a->modelInfo.name != b->modelInfo.name ||
        a->modelInfo.vocabulary != b->modelInfo.vocabulary) {
        setVisible(false);
        clear();
        return;
    }
    m_x = na.top.front().id;
    m_y = nb.top.front().id != m_x ? nb.top.front().id : na.top.size() > 1 ? na.top[1].id : -1;
    // one row a side, best first: four lines across the tab's width (a column of five rows under
    // the focus word left its plot ~150 px)
    QString html = tr("<b>Next token after the last token</b>"
                      "<table cellspacing='0' cellpadding='1'>");
    for (const NextTokens *n : {&na, &nb}) {
        html += QStringLiteral("<tr><td><b>%1</b>&nbsp;&nbsp;</td>").arg(n == &na ? QStringLiteral("A") : QStringLiteral("B"));
        for (int i = 0; i < kShown && size_t(i) < n->top.size(); ++i) {
            const TokenProb &p = n->top[size_t(i)];
            // (a narrow tab wraps a cell between its token and its share)
            html += QStringLiteral("<td>%1 %2&nbsp;%&nbsp;&nbsp;&nbsp;</td>").arg(shown(p)).arg(100.0 * p.p, 0, 'f', 1);
        }
        html += QStringLiteral("</tr>");
    }
    html += QStringLiteral("</table>");
    if (m_y >= 0) {
        m_diffA = logitOf(a, na, m_x) - logitOf(a, na, m_y);
        m_diffB = logitOf(b, nb, m_x) - logitOf(b, nb, m_y);
        const TokenProb tx = tokenOf(*a->model, m_x), ty = tokenOf(*a->model, m_y);
        html += tr("Logit difference “%1” − “%2”: A %3 · B %4 (%5)")
                    .arg(shown(tx), shown(ty), signedValue(m_diffA), signedValue(m_diffB),
                         nb.top.front().id != m_x ? tr("A's top token against B's") : tr("both sides' top two"));
    }
    setText(html);
    setVisible(true);
}

} // namespace attnviz::ui
