// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/predictionsview.h"

#include "attnviz/reads.h"

#include <QFontMetricsF>
#include <QScrollBar>
#include <QTextBrowser>
#include <QTextDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

namespace {

QString percent(double p)
{
    if (!std::isfinite(p))
        return QStringLiteral("—");
    const double v = 100.0 * p;
    return QString::number(v, 'f', v >= 10 ? 1 : v >= 0.1 ? 2 : 4) + QChar(0x00A0) + QLatin1Char('%'); // never wrapped
}

// The longest token a list shows whole ("␣students"); a longer one ends in "…". The panel is as
// wide as the widest row a list can show (this token, the widest probability and change, the
// longest id) from the first list on: no later list (a position hovered, a head ablated: its
// changes and other tokens) widens the dock, which made the window lay out every view again.
constexpr int kTokenChars = 9;

PredictionsView::Group makeGroup(const std::vector<TokenProb> &top)
{
    PredictionsView::Group g;
    for (const TokenProb &t : top)
        g.entries.push_back({t.id, QString::fromStdString(t.display.empty() ? t.token : t.display), t.p});
    return g;
}

} // namespace

PredictionsView::PredictionsView(QWidget *parent) : View(parent), m_text(new QTextBrowser(this))
{
    // A read-only text view, not a word-wrapped QLabel in a scroll area: the label laid the table out
    // three or four times a keystroke (its minimum size, its height for the width, its paint); this
    // lays it out once, at the panel's width, and paints the part in view. Drawn as the label was: no
    // frame, the window's background, 6 px around the text.
    m_text->setObjectName(QStringLiteral("predictionsText"));
    m_text->setFrameShape(QFrame::NoFrame);
    m_text->setOpenLinks(false);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_text->viewport()->setAutoFillBackground(false);
    m_text->setAutoFillBackground(false);
    m_text->document()->setDocumentMargin(6);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_text);
    rebuild();
}

void PredictionsView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    keepValidComputed();
    rebuild();
}

namespace {

// Token ids [0, n) of a trace.
std::vector<int> idsOf(const Trace<float> &trace, int n)
{
    std::vector<int> ids(size_t(std::max(0, n)));
    for (int i = 0; i < n; ++i)
        ids[size_t(i)] = trace.tokens[size_t(i)].id;
    return ids;
}

// How many ids a position's next tokens depend on: up to the token after it.
int idsFor(int position, int tokens) { return std::min(position + 2, tokens); }

} // namespace

void PredictionsView::keepValidComputed()
{
    const Trace<float> *tr = m_snapshot && m_snapshot->causalLm() && m_snapshot->hasResult() ? m_snapshot->trace.get() : nullptr;
    if (!tr || tr->producer != m_computedProducer || tr->paddedKeys != m_computedPadded ||
        tr->maskedCells != m_computedCells) {
        m_computed.clear();
        m_computedProducer = tr ? tr->producer : 0;
        m_computedPadded = tr ? tr->paddedKeys : std::vector<int>();
        m_computedCells = tr ? tr->maskedCells : std::vector<std::pair<int, int>>();
        return;
    }
    const int t = int(tr->tokens.size());
    for (auto it = m_computed.begin(); it != m_computed.end();) {
        const int n = idsFor(it->first, t);
        bool same = it->first < t && int(it->second.ids.size()) == n;
        for (int i = 0; same && i < n; ++i)
            same = it->second.ids[size_t(i)] == tr->tokens[size_t(i)].id;
        it = same ? std::next(it) : m_computed.erase(it);
    }
}

bool PredictionsView::nextTokensAt(int position, NextTokens &out)
{
    const ComputeSnapshot &s = *m_snapshot;
    const Trace<float> &trace = *s.trace;
    const Predictions &pr = trace.predictions;
    if (position < int(pr.next.size()) && !pr.next[size_t(position)].empty()) {
        out = pr.at(size_t(position));
        return true;
    }
    if (auto it = m_computed.find(position); it != m_computed.end()) {
        out = it->second.next;
        return true;
    }
    if (s.encoderDecoder) { // the trace holds the decoder's next token after the target only
        m_message = tr("Predictions before the last target token: not yet for encoder-decoder models.");
        return false;
    }
    if (!s.model) {
        m_message = tr("No predictions were computed for this text.");
        return false;
    }
    // One position's LM head (GPT-2 small: 768 x 50,257, ~39 M multiply-adds, the 154 MB of its
    // embeddings read once) on this thread, with the pool's threads when the compute thread leaves
    // them free. The snapshot's trace is only read.
    Computed c;
    if (Status st = s.model->nextTokens(trace, position, c.next); !st) {
        m_message = QString::fromStdString(st.message);
        return false;
    }
    c.ids = idsOf(trace, idsFor(position, int(trace.tokens.size())));
    if (m_computed.size() >= 256) // a long text hovered end to end: keep the memory small
        m_computed.clear();
    out = c.next;
    m_computed[position] = std::move(c);
    return true;
}

void PredictionsView::setHoveredPosition(int position)
{
    if (position == m_hovered)
        return;
    m_hovered = position;
    rebuild();
}

void PredictionsView::setSelectedPosition(int position)
{
    if (position == m_selected)
        return;
    m_selected = position;
    rebuild();
}

void PredictionsView::rebuild()
{
    m_groups.clear();
    m_message.clear();
    const SnapshotPtr &s = m_snapshot;
    if (s && s->modelInfo.family == "t5encoder") {
        m_message = tr("A T5 encoder alone (%1) has no decoder and no LM head: it encodes the text and predicts "
                       "nothing (the t5 file of the same model generates).")
                        .arg(QString::fromStdString(s->modelInfo.name));
    } else if (!s || !(s->causalLm() || s->maskedLm())) {
        m_message = tr("The model shown has no prediction head (open a GPT-2 or BERT model folder).");
    } else if (!s->hasResult()) {
        m_message = s->message.isEmpty() ? tr("Computing…") : s->message;
    } else if (s->causalLm()) {
        const Predictions &pr = s->trace->predictions;
        const int t = s->tq();
        const bool hovering = m_hovered >= 0 && m_hovered < t && m_hovered < int(pr.next.size());
        const bool selected = m_selected >= 0 && m_selected < t && m_selected < int(pr.next.size());
        const int at = hovering ? m_hovered : selected ? m_selected : std::min(t, int(pr.next.size())) - 1;
        NextTokens next;
        if (at < 0 || !nextTokensAt(at, next) || next.top.empty()) {
            if (m_message.isEmpty())
                m_message = tr("No predictions were computed for this text.");
        } else {
            Group g = makeGroup(next.top);
            g.position = at;
            const QString tok = s->queryLabels.value(at);
            // the last token shown is the text's last only when the text was not cut
            g.heading = at == t - 1 && s->totalQueryTokens <= t ? tr("Next token after “%1” (the last token)").arg(tok)
                : at == t - 1 ? tr("Next token after “%1” (position %2, the last of the %L3 shown; the text has %L4)")
                                    .arg(tok)
                                    .arg(at)
                                    .arg(t)
                                    .arg(s->totalQueryTokens)
                              : tr("After “%1” (position %2) the model predicted").arg(tok).arg(at);
            // the edited model's last position beside the clean model's
            if (at == t - 1 && s->trace->edited() && !s->cleanNext.empty()) {
                for (Entry &e : g.entries)
                    if (e.id >= 0 && e.id < int(s->cleanNext.size()))
                        e.delta = e.p - double(s->cleanNext[size_t(e.id)]);
                // the heading short (two lines in a narrow dock), the edits and what Δ means under the list
                g.heading += tr(", edited model");
                // what the clean model put first, and where the edit left it
                const auto best = std::max_element(s->cleanNext.begin(), s->cleanNext.end());
                const int id = int(best - s->cleanNext.begin());
                const TokenProb tp = s->model ? tokenOf(*s->model, id) : TokenProb{id, std::string(), 0.0, std::string()};
                const QString name = QString::fromStdString(tp.display.empty() ? tp.token : tp.display);
                QString now = tr("not in the edited model's top %1").arg(g.entries.size());
                for (const Entry &e : g.entries)
                    if (e.id == id)
                        now = tr("the edited model gives it %1").arg(percent(e.p));
                g.note = tr("Edited: %1; Δ is the change against the clean model. The clean model's top token here: "
                            "“%2”, p = %3; %4.")
                             .arg(describeAblations(s->trace->edits), name, percent(double(*best)), now);
            }
            if (at + 1 < t) {
                const double p = next.actualNext;
                g.actualNext = p;
                int rank = -1;
                const int actualId = s->trace->tokens[size_t(at + 1)].id;
                for (size_t r = 0; r < g.entries.size(); ++r)
                    if (g.entries[r].id == actualId)
                        rank = int(r) + 1;
                g.note = tr("The token that actually follows, “%1”, got p = %2%3.")
                             .arg(s->queryLabels.value(at + 1), percent(p),
                                  rank > 0 ? tr(" (its rank %1 above)").arg(rank)
                                           : tr(" (not in the top %1)").arg(g.entries.size()));
            } else if (!hovering && g.note.isEmpty()) {
                g.note = tr("Hover a token (the chips or a heatmap row) to see what the model predicted there.");
            }
            m_groups.push_back(std::move(g));
        }
    } else {
        const Predictions &pr = s->trace->predictions;
        if (pr.masked.empty())
            m_message = tr("Click a token (or type [MASK]) to hide it: the model then says what it would put there.");
        for (const Predictions::Masked &m : pr.masked) {
            Group g = makeGroup(m.top);
            g.position = m.position;
            g.heading = tr("[MASK] at position %1: the top fills").arg(m.position);
            m_groups.push_back(std::move(g));
        }
    }
    const QString text = html();
    if (text != m_shown) { // hovering the same position again, or the same predictions: nothing to lay out
        m_shown = text;
        m_text->setHtml(text);
        // the lists' rows never wrap: the panel is at least as wide as the widest row a list can
        // show (its id column was cut off in a narrow dock); it only grows, so that a message
        // between lists does not make the dock jump
        std::vector<Group> measured = m_groups;
        if (!m_groups.empty()) {
            Group widest;
            // (the id as many digits as the vocabulary's last)
            const int lastId = s->modelInfo.vocabulary > 1 ? s->modelInfo.vocabulary - 1 : 999999;
            Entry row{int(std::pow(10, QString::number(lastId).size())) - 1, QString(kTokenChars, QLatin1Char('M')), 0.000999};
            if (s->causalLm()) { // a change against the clean model, in the widest of deltaText's forms
                const QFontMetricsF fm(m_text->document()->defaultFont());
                for (const double d : {-0.88, -0.0088, -8.8e-5})
                    if (!std::isfinite(row.delta) || fm.horizontalAdvance(deltaText(d)) > fm.horizontalAdvance(deltaText(row.delta)))
                        row.delta = d;
            }
            widest.entries.push_back(row);
            measured.push_back(widest);
        }
        QTextDocument probe;
        probe.setDefaultFont(m_text->document()->defaultFont());
        probe.setDocumentMargin(m_text->document()->documentMargin());
        probe.setHtml(htmlOf(measured));
        probe.setTextWidth(1); // the paragraphs wrap word by word; the tables keep their width
        const int need = int(std::ceil(probe.idealWidth() + 2 * probe.documentMargin()))
            + m_text->verticalScrollBar()->sizeHint().width() + 2;
        if (need > m_text->minimumWidth())
            m_text->setMinimumWidth(std::min(need, 480));
    }
}

void PredictionsView::changeEvent(QEvent *e)
{
    View::changeEvent(e);
    // The lists are HTML with the highlight colour written in, and the panel's minimum width only
    // grows with them: a new palette or font (a theme; presentation mode and back) writes them again
    // and measures that width anew, once every widget has the new palette and font. Otherwise the
    // presenting theme's yellow bars stayed after Esc, and its larger text's width widened the dock.
    if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange)
        QMetaObject::invokeMethod(this, [this] {
            m_shown.clear();
            m_text->setMinimumWidth(0);
            rebuild();
        }, Qt::QueuedConnection);
}

QString PredictionsView::html() const
{
    return htmlOf(m_groups);
}

QString PredictionsView::htmlOf(const std::vector<Group> &groups) const
{
    if (!m_message.isEmpty())
        return QStringLiteral("<p>%1</p>").arg(m_message.toHtmlEscaped());
    const QColor bar = palette().color(QPalette::Highlight);
    QString out;
    for (const Group &g : groups) {
        out += QStringLiteral("<p><b>%1</b></p><table cellspacing=\"2\" cellpadding=\"1\">")
                   .arg(g.heading.toHtmlEscaped());
        const double top = g.entries.empty() ? 1.0 : std::max(1e-12, g.entries.front().p);
        for (const Entry &e : g.entries) {
            const int w = std::max(1, int(std::lround(60.0 * e.p / top)));
            // an edited model's change against the clean model under the probability, in that
            // column: a column of its own widened the dock when a head was ablated
            QString p = percent(e.p);
            if (std::isfinite(e.delta))
                p += QStringLiteral("<br><small><font color=\"%1\">%2</font></small>")
                         .arg(e.delta > 0 ? QStringLiteral("#1a8a1a") : e.delta < 0 ? QStringLiteral("#c62828") : palette().color(QPalette::Text).name(),
                              deltaText(e.delta));
            // (a token cut short keeps its whole text in the title: its tooltip)
            const QString token = shownToken(e.token) == e.token
                                      ? e.token.toHtmlEscaped()
                                      : QStringLiteral("<span title=\"%1\">%2</span>").arg(e.token.toHtmlEscaped(), shownToken(e.token).toHtmlEscaped());
            out += QStringLiteral("<tr><td style=\"white-space:nowrap\"><code>%1</code></td><td style=\"white-space:nowrap\" align=\"right\">%2</td>"
                                  "<td style=\"white-space:nowrap\"><table cellspacing=\"0\" cellpadding=\"0\"><tr><td width=\"%3\" "
                                  "bgcolor=\"%4\">&nbsp;</td></tr></table></td><td style=\"white-space:nowrap\"><small>#%5</small></td></tr>")
                       .arg(token, p)
                       .arg(w)
                       .arg(bar.name())
                       .arg(e.id);
        }
        out += QStringLiteral("</table>");
        if (!g.note.isEmpty())
            out += QStringLiteral("<p>%1</p>").arg(g.note.toHtmlEscaped());
    }
    return out;
}

QString PredictionsView::shownToken(const QString &token)
{
    return token.size() <= kTokenChars ? token : token.left(kTokenChars - 1) + QChar(0x2026);
}

QString PredictionsView::deltaText(double d)
{
    if (!std::isfinite(d))
        return QString();
    const double a = std::abs(d);
    // two decimals as the "+0.12"; a tiny model's near-uniform changes keep their digits
    const QString digits = a >= 0.005 || a == 0 ? QString::number(a, 'f', 2)
        : a >= 0.00005                          ? QString::number(a, 'f', 4)
                                                : QString::number(a, 'e', 1);
    return (d > 0 ? QStringLiteral("+") : d < 0 ? QString(QChar(0x2212)) : QString()) + digits;
}

QString PredictionsView::maskedSentence(const ComputeSnapshot &s, int position)
{
    if (!s.trace || position < 0 || position >= int(s.trace->tokens.size()))
        return QString();
    const TraceToken &t = s.trace->tokens[size_t(position)];
    const QByteArray text = s.sentence.toUtf8();
    if (t.special || t.end <= t.begin || t.end > size_t(text.size()))
        return QString();
    // the token's bytes; a piece of a word ("##ing") is replaced alone
    return QString::fromUtf8(text.left(qsizetype(t.begin)) + QByteArrayLiteral("[MASK]") + text.mid(qsizetype(t.end)));
}

} // namespace attnviz::ui
