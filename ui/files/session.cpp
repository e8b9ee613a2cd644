// SPDX-License-Identifier: GPL-3.0-or-later
#include "files/session.h"

#include "bundledmodel.h"

#include "files/messagetext.h"
#include "teaching/seedtables.h"
#include "views/viewregistry.h"

#include "attnviz/fileio.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace attnviz::ui {

namespace {

// Enum <-> the string a session file holds.
template <typename E>
struct NamedEnum {
    E value;
    const char *name;
};

const NamedEnum<ScaleRule> kScaleRules[] = {{ScaleRule::InvSqrtDHead, "1/sqrt(d_head)"},
                                        {ScaleRule::InvSqrtDModel, "1/sqrt(d_model)"},
                                        {ScaleRule::None, "none"},
                                        {ScaleRule::Temperature, "temperature"}};
const NamedEnum<Normalization> kNormalizations[] = {
    {Normalization::Softmax, "softmax"}, {Normalization::Sum, "sum"}, {Normalization::Cosine, "cosine"}};
const NamedEnum<MaskChoice> kMasks[] = {{MaskChoice::None, "none"},
                                    {MaskChoice::Causal, "causal"},
                                    {MaskChoice::Padding, "padding"},
                                    {MaskChoice::CausalPadding, "causal+padding"},
                                    {MaskChoice::Custom, "custom"}};
const NamedEnum<MaskMethod> kMaskMethods[] = {{MaskMethod::NegInf, "neg_inf"},
                                          {MaskMethod::MultiplyRenormalize, "renormalize"}};
const NamedEnum<ProjectionMode> kProjections[] = {
    {ProjectionMode::Identity, "identity"}, {ProjectionMode::Random, "random"}, {ProjectionMode::File, "file"}};
const NamedEnum<InitScheme> kInitSchemes[] = {{InitScheme::TorchLinear, "nn.Linear"},
                                          {InitScheme::Uniform01, "torch.rand"},
                                          {InitScheme::XavierUniform, "xavier"}};
const NamedEnum<DrawOrder> kDrawOrders[] = {{DrawOrder::Fused, "fused"}, {DrawOrder::PerHead, "per_head"}};
const NamedEnum<NormPlacement> kNormPlacements[] = {{NormPlacement::Post, "post"}, {NormPlacement::Pre, "pre"}};
const NamedEnum<Activation> kActivations[] = {
    {Activation::Relu, "relu"}, {Activation::GeluErf, "gelu"}, {Activation::GeluTanh, "gelu_tanh"}};
const NamedEnum<PositionEncoding> kPositions[] = {{PositionEncoding::None, "none"},
                                              {PositionEncoding::Sinusoidal, "sinusoidal"},
                                              {PositionEncoding::Learned, "learned"}};
const NamedEnum<StackWeightsSource> kStackSources[] = {{StackWeightsSource::Seeded, "seeded"},
                                                   {StackWeightsSource::File, "file"}};
const NamedEnum<HeadDisplay> kHeadDisplays[] = {
    {HeadDisplay::One, "one"}, {HeadDisplay::Average, "average"}, {HeadDisplay::All, "all"}};
const NamedEnum<TableKind> kTableKinds[] = {{TableKind::Unsaved, "unsaved"},
                                        {TableKind::Bundled, "bundled"},
                                        {TableKind::File, "file"},
                                        {TableKind::Seed, "seed"}};
const NamedEnum<AttentionKind> kAttentionKinds[] = {
    {AttentionKind::Self, "decoder"}, {AttentionKind::Encoder, "encoder"}, {AttentionKind::Cross, "cross"}};
const char *const kBackends[] = {"cpu", "gpu", "auto"};

template <typename E, size_t N>
QString nameOf(const NamedEnum<E> (&table)[N], E v)
{
    for (const auto &n : table)
        if (n.value == v)
            return QString::fromLatin1(n.name);
    return QString::fromLatin1(table[0].name);
}

template <typename E, size_t N>
QString choices(const NamedEnum<E> (&table)[N])
{
    QStringList l;
    for (const auto &n : table)
        l << QLatin1Char('"') + QString::fromLatin1(n.name) + QLatin1Char('"');
    return l.join(QStringLiteral(", "));
}

// A value as it stands in the file: -3, "four", true, [1,2]; a long one as an excerpt, control
// characters escaped (messagetext.h: the problems are shown in the window).
QString jsonText(const QJsonValue &v)
{
    if (v.isUndefined())
        return QStringLiteral("nothing");
    if (v.isString())
        return quotedText(v.toString());
    const QByteArray a = QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact);
    return shownText(QString::fromUtf8(a.mid(1, a.size() - 2)), 64);
}

// A key from the file (an unknown one is named in the problems): escaped, at most an excerpt.
QString keyText(const QString &k) { return shownText(k, 64); }

constexpr quint64 kMaxSeed = 1u << 30; // the seed spin boxes' range

// One section of the file: takes keys by name, reports values it cannot use, and at the end every
// key nobody took.
class Section {
public:
    Section(const QJsonObject &o, QString path, QStringList *problems, bool newer)
        : m_o(o), m_path(std::move(path)), m_problems(problems), m_newer(newer)
    {
    }

    QString key(const char *k) const
    {
        return m_path.isEmpty() ? QString::fromLatin1(k) : m_path + QLatin1Char('.') + QLatin1String(k);
    }
    void problem(const QString &p) const
    {
        if (m_problems)
            *m_problems << p;
    }
    // The value under `k` (undefined when absent); marks `k` as understood.
    QJsonValue take(const char *k)
    {
        m_taken << QString::fromLatin1(k);
        return m_o.value(QLatin1String(k));
    }
    Section sub(const char *k, bool *present = nullptr)
    {
        const QJsonValue v = take(k);
        if (present)
            *present = v.isObject();
        if (!v.isUndefined() && !v.isObject())
            problem(QStringLiteral("%1: %2 is not an object; its defaults are used").arg(key(k), jsonText(v)));
        return Section(v.toObject(), key(k), m_problems, m_newer);
    }
    void finish() const
    {
        for (auto it = m_o.begin(); it != m_o.end(); ++it)
            if (!m_taken.contains(it.key()))
                problem(QStringLiteral("ignored: %1 (%2)")
                            .arg(m_path.isEmpty() ? keyText(it.key()) : m_path + QLatin1Char('.') + keyText(it.key()),
                                 m_newer ? QStringLiteral("written by a newer attnviz")
                                         : QStringLiteral("not a key this attnviz knows")));
    }

    void readInt(const char *k, int lo, int hi, const QString &what, int &out)
    {
        const QJsonValue v = take(k);
        if (v.isUndefined())
            return;
        const double d = v.toDouble(std::nan(""));
        if (!v.isDouble() || d != std::floor(d) || d < lo || d > hi) {
            problem(QStringLiteral("%1: %2 is not %3 (%4 to %5)").arg(key(k), jsonText(v), what).arg(lo).arg(hi));
            return;
        }
        out = int(d);
    }
    void readSeed(const char *k, quint64 &out)
    {
        int seed = int(out);
        readInt(k, 0, int(kMaxSeed), QStringLiteral("a seed"), seed);
        out = quint64(seed);
    }
    void readDouble(const char *k, double lo, double hi, const QString &what, double &out)
    {
        const QJsonValue v = take(k);
        if (v.isUndefined())
            return;
        const double d = v.toDouble(std::nan(""));
        if (!v.isDouble() || !(d >= lo - 1e-9 && d <= hi + 1e-9)) {
            problem(QStringLiteral("%1: %2 is not %3 (%4 to %5)").arg(key(k), jsonText(v), what).arg(lo).arg(hi));
            return;
        }
        out = std::clamp(d, lo, hi);
    }
    void readBool(const char *k, bool &out)
    {
        const QJsonValue v = take(k);
        if (v.isUndefined())
            return;
        if (!v.isBool()) {
            problem(QStringLiteral("%1: %2 is not true or false").arg(key(k), jsonText(v)));
            return;
        }
        out = v.toBool();
    }
    void readString(const char *k, QString &out)
    {
        const QJsonValue v = take(k);
        if (v.isUndefined())
            return;
        if (!v.isString()) {
            problem(QStringLiteral("%1: %2 is not text").arg(key(k), jsonText(v)));
            return;
        }
        out = v.toString();
    }
    // A file path or null (none).
    void readPath(const char *k, QString &out)
    {
        const QJsonValue v = take(k);
        if (v.isUndefined())
            return;
        if (v.isNull()) {
            out.clear();
        } else if (v.isString() && !v.toString().isEmpty()) {
            out = v.toString();
        } else {
            problem(QStringLiteral("%1: %2 is not a file path or null").arg(key(k), jsonText(v)));
        }
    }
    template <typename E, size_t N>
    void readEnum(const char *k, const NamedEnum<E> (&table)[N], E &out)
    {
        const QJsonValue v = take(k);
        if (v.isUndefined())
            return;
        for (const auto &n : table) {
            if (v.isString() && v.toString() == QLatin1String(n.name)) {
                out = n.value;
                return;
            }
        }
        problem(QStringLiteral("%1: %2 is not one of %3").arg(key(k), jsonText(v), choices(table)));
    }

private:
    QJsonObject m_o;
    QString m_path;
    QStringList *m_problems;
    bool m_newer;
    QStringList m_taken;
};

// The longest word a session's sentence may hold: Qt lays out a word it cannot break in time that
// grows with the square of its length (a 300,000-character word took 6 s in the sentence box,
// 1,000,000 over two minutes); 10,000 characters take milliseconds.
constexpr int kMaxWordChars = 10000;

// A sentence: text whose words are at most kMaxWordChars long; a longer one is a problem and the
// sentence stays as it was.
void readSentence(Section &sec, const char *k, QString &out)
{
    QString text = out;
    sec.readString(k, text);
    int longest = 0, run = 0;
    for (const QChar c : text) {
        run = c.isSpace() ? 0 : run + 1;
        longest = std::max(longest, run);
    }
    if (longest > kMaxWordChars) {
        sec.problem(QStringLiteral("%1: one word of %2 characters, more than the %3 the sentence box lays out in time "
                                   "(the sentence is not opened)")
                        .arg(sec.key(k), QString::fromStdString(describeCount(longest)),
                             QString::fromStdString(describeCount(kMaxWordChars))));
        return;
    }
    out = text;
}

void readInput(Section sec, SessionState &s)
{
    readSentence(sec, "sentence", s.sentence);
    readSentence(sec, "keySentence", s.keySentence);
    readSentence(sec, "target", s.target);
    sec.readInt("beams", 1, 4, QStringLiteral("a beam count"), s.beams);
    sec.readString("sourceLanguage", s.sourceLanguage); // checked against the folder's codes when it opens
    sec.readString("targetLanguage", s.targetLanguage);
    const QJsonValue padded = sec.take("paddedKeys");
    if (!padded.isUndefined()) {
        if (!padded.isArray()) {
            sec.problem(QStringLiteral("%1: %2 is not a list of token indices").arg(sec.key("paddedKeys"), jsonText(padded)));
        } else {
            s.paddedKeys.clear();
            const QJsonArray a = padded.toArray();
            for (qsizetype i = 0; i < a.size(); ++i) {
                const double d = a[i].toDouble(-1);
                if (!a[i].isDouble() || d != std::floor(d) || d < 0 || d > 1e9)
                    sec.problem(QStringLiteral("%1[%2]: %3 is not a token index").arg(sec.key("paddedKeys")).arg(i).arg(jsonText(a[i])));
                else
                    s.paddedKeys.insert(int(d));
            }
        }
    }
    const QJsonValue custom = sec.take("customMask");
    if (!custom.isUndefined()) {
        if (!custom.isArray()) {
            sec.problem(QStringLiteral("%1: %2 is not a list of [query, key] cells").arg(sec.key("customMask"), jsonText(custom)));
        } else {
            s.customMask.clear();
            const QJsonArray a = custom.toArray();
            for (qsizetype i = 0; i < a.size(); ++i) {
                const QJsonArray cell = a[i].toArray();
                const auto index = [](const QJsonValue &v) {
                    const double d = v.toDouble(-1);
                    return v.isDouble() && d == std::floor(d) && d >= 0 && d <= 1e9 ? int(d) : -1;
                };
                if (!a[i].isArray() || cell.size() != 2 || index(cell[0]) < 0 || index(cell[1]) < 0)
                    sec.problem(QStringLiteral("%1[%2]: %3 is not a [query, key] cell").arg(sec.key("customMask")).arg(i).arg(jsonText(a[i])));
                else
                    s.customMask.insert({index(cell[0]), index(cell[1])});
            }
        }
    }
    sec.finish();
}

void readStack(Section sec, StackSettings &st)
{
    sec.readInt("depth", 1, 48, QStringLiteral("a stack depth"), st.depth);
    sec.readEnum("norm", kNormPlacements, st.norm);
    sec.readEnum("activation", kActivations, st.activation);
    sec.readEnum("positions", kPositions, st.positions);
    sec.readEnum("source", kStackSources, st.source);
    sec.readSeed("seed", st.seed);
    sec.finish();
}

void readSettings(Section sec, ComputeSettings &c)
{
    sec.readInt("numHeads", 1, 64, QStringLiteral("a head count"), c.numHeads);
    sec.readInt("dHead", 0, 4096, QStringLiteral("a head width (0 = d_model / heads)"), c.dHead);
    sec.readEnum("scaleRule", kScaleRules, c.scaleRule);
    sec.readDouble("temperature", 0.05, 20.0, QStringLiteral("a temperature"), c.temperature);
    sec.readEnum("normalization", kNormalizations, c.normalization);
    sec.readEnum("mask", kMasks, c.mask);
    sec.readEnum("maskMethod", kMaskMethods, c.maskMethod);
    sec.readEnum("projection", kProjections, c.projection);
    sec.readSeed("projectionSeed", c.projectionSeed);
    sec.readEnum("initScheme", kInitSchemes, c.initScheme);
    sec.readEnum("drawOrder", kDrawOrders, c.drawOrder);
    sec.readInt("outWidth", -1, 4096, QStringLiteral("a W_o width (-1 = none, 0 = d_model)"), c.outWidth);
    sec.readDouble("dropout", 0.0, 0.95, QStringLiteral("a dropout rate"), c.dropout);
    sec.readSeed("dropoutSeed", c.dropoutSeed);
    const QJsonValue backend = sec.take("backend");
    if (!backend.isUndefined()) {
        if (std::find(std::begin(kBackends), std::end(kBackends), backend.toString()) != std::end(kBackends))
            c.backend = backend.toString();
        else
            sec.problem(QStringLiteral("%1: %2 is not one of \"cpu\", \"gpu\", \"auto\"").arg(sec.key("backend"), jsonText(backend)));
    }
    readStack(sec.sub("stack"), c.stack);
    sec.finish();
}

void readTable(Section sec, SessionState &s)
{
    TableKind kind = TableKind::Unsaved;
    const QJsonValue k = sec.take("kind");
    bool known = false;
    for (const auto &n : kTableKinds)
        if (k.isString() && k.toString() == QLatin1String(n.name)) {
            kind = n.value;
            known = true;
        }
    QString path, name;
    sec.readPath("path", path);
    sec.readString("name", name);
    sec.take("description"); // written for people; the table itself is what kind/path/name say
    if (known && kind == TableKind::Unsaved) {
        sec.problem(QStringLiteral("table: the table in use when this was saved was set from code and not saved "
                                   "in the session; the table in use stays"));
    } else if (!known) {
        sec.problem(QStringLiteral("%1: %2 is not one of %3; the table in use stays")
                        .arg(sec.key("kind"), jsonText(k), choices(kTableKinds)));
    } else if (kind == TableKind::File && path.isEmpty()) {
        sec.problem(QStringLiteral("%1: a \"file\" table needs a path; the table in use stays").arg(sec.key("path")));
        kind = TableKind::Unsaved;
    } else if (kind == TableKind::Seed && !seedTableByName(name)) {
        sec.problem(QStringLiteral("%1: %2 is not a seed table (\"journey\", \"bloem\"); the table in use stays")
                        .arg(sec.key("name"), jsonText(QJsonValue(name))));
        kind = TableKind::Unsaved;
    }
    s.tableKind = kind;
    s.tablePath = kind == TableKind::File ? path : QString();
    s.tableName = kind == TableKind::Seed ? name : QString();
    sec.finish();
}

void readView(Section sec, SessionState &s)
{
    const QJsonValue tab = sec.take("tab");
    if (!tab.isUndefined()) {
        const QStringList tabs = tabViewIds();
        if (tabs.contains(tab.toString()))
            s.tab = tab.toString();
        else
            sec.problem(QStringLiteral("%1: %2 is not a view (\"%3\")")
                            .arg(sec.key("tab"), jsonText(tab), tabs.join(QStringLiteral("\", \""))));
    }
    sec.readEnum("headDisplay", kHeadDisplays, s.headDisplay);
    sec.readInt("selectedHead", 0, 63, QStringLiteral("a head index"), s.selectedHead);
    sec.readInt("selectedQuery", 0, 1 << 20, QStringLiteral("a query index"), s.selectedQuery);
    sec.readInt("layer", 0, 47, QStringLiteral("a layer index"), s.layer);
    sec.readBool("showNumbers", s.showNumbers);
    sec.readDouble("linesThreshold", 0.0, 1.0, QStringLiteral("an opacity"), s.linesThreshold);
    sec.readBool("linesScaleRows", s.linesScaleRows);
    sec.readBool("normWeighted", s.normWeighted);
    sec.readBool("meanPooling", s.meanPooling);
    sec.readEnum("attention", kAttentionKinds, s.attention);
    sec.finish();
}

QJsonObject settingsToJson(const ComputeSettings &c)
{
    const QJsonObject stack{{QStringLiteral("depth"), c.stack.depth},
                            {QStringLiteral("norm"), nameOf(kNormPlacements, c.stack.norm)},
                            {QStringLiteral("activation"), nameOf(kActivations, c.stack.activation)},
                            {QStringLiteral("positions"), nameOf(kPositions, c.stack.positions)},
                            {QStringLiteral("source"), nameOf(kStackSources, c.stack.source)},
                            {QStringLiteral("seed"), double(c.stack.seed)}};
    return QJsonObject{{QStringLiteral("numHeads"), c.numHeads},
                               {QStringLiteral("dHead"), c.dHead},
                               {QStringLiteral("scaleRule"), nameOf(kScaleRules, c.scaleRule)},
                               {QStringLiteral("temperature"), c.temperature},
                               {QStringLiteral("normalization"), nameOf(kNormalizations, c.normalization)},
                               {QStringLiteral("mask"), nameOf(kMasks, c.mask)},
                               {QStringLiteral("maskMethod"), nameOf(kMaskMethods, c.maskMethod)},
                               {QStringLiteral("projection"), nameOf(kProjections, c.projection)},
                               {QStringLiteral("projectionSeed"), double(c.projectionSeed)},
                               {QStringLiteral("initScheme"), nameOf(kInitSchemes, c.initScheme)},
                               {QStringLiteral("drawOrder"), nameOf(kDrawOrders, c.drawOrder)},
                               {QStringLiteral("outWidth"), c.outWidth},
                               {QStringLiteral("dropout"), c.dropout},
                               {QStringLiteral("dropoutSeed"), double(c.dropoutSeed)},
                               {QStringLiteral("backend"), c.backend},
                               {QStringLiteral("stack"), stack}};

}

void readAppearance(Section sec, Appearance &a)
{
    auto readId = [&sec](const char *k, auto parse, auto &out, const char *choices) {
        QString id;
        sec.readString(k, id);
        if (!id.isEmpty() && !parse(id, out))
            sec.problem(QStringLiteral("%1: %2 is not one of %3").arg(sec.key(k), quotedText(id), QLatin1String(choices)));
    };
    readId("theme", parseTheme, a.theme, "system, light, dark, high-contrast");
    readId("weightsMap", parseSequential, a.sequential, "viridis, cividis, magma, greys");
    readId("signedMap", parseDiverging, a.diverging, "blue-red, purple-orange");
    sec.readDouble("textScale", 0.6, 3.0, QStringLiteral("a text scale"), a.fontScale);
    sec.finish();
}

void readCompare(Section sec, SessionState::CompareB &b)
{
    b.present = true;
    readSentence(sec, "sentence", b.sentence);
    readSentence(sec, "keySentence", b.keySentence);
    readSettings(sec.sub("settings"), b.settings);
    QString table;
    sec.readString("seedTable", table);
    if (!table.isEmpty() && !seedTableByName(table))
        sec.problem(QStringLiteral("%1: %2 is not a seed table (journey, bloem); B uses A's table")
                        .arg(sec.key("seedTable"), quotedText(table)));
    else
        b.seedTable = table;
    sec.finish();
}

// "ablations": {"heads": [{"layer": 1, "head": 2, "kind": "zero" | "mean"}, …], "shownClean": false}.
// Whether the layers and heads exist is the model's business (the window checks when it applies them).
void readAblations(Section sec, SessionState &s)
{
    const QJsonValue heads = sec.take("heads");
    if (!heads.isUndefined() && !heads.isArray())
        sec.problem(QStringLiteral("%1: %2 is not a list of heads").arg(sec.key("heads"), jsonText(heads)));
    const QJsonArray a = heads.toArray();
    std::vector<Intervention> out;
    for (int i = 0; i < a.size(); ++i) {
        const QString at = QStringLiteral("%1[%2]").arg(sec.key("heads")).arg(i);
        if (!a[i].isObject()) {
            sec.problem(QStringLiteral("%1: %2 is not a head (layer, head, kind)").arg(at, jsonText(a[i])));
            continue;
        }
        QStringList lines;
        Section h(a[i].toObject(), at, &lines, false);
        Intervention e;
        e.hook = HookPoint::AttnZ;
        e.layer = -1;
        e.head = -1;
        h.readInt("layer", 0, 10000, QStringLiteral("a layer"), e.layer);
        h.readInt("head", 0, 10000, QStringLiteral("a head"), e.head);
        QString kind = QStringLiteral("zero");
        h.readString("kind", kind);
        h.finish();
        if (kind == QLatin1String("mean"))
            e.kind = EditKind::MeanOverText;
        else if (kind != QLatin1String("zero"))
            lines << QStringLiteral("%1.kind: %2 is not zero or mean").arg(at, quotedText(kind));
        if (e.layer < 0 || e.head < 0)
            lines << QStringLiteral("%1: no layer and head").arg(at);
        if (!lines.isEmpty()) { // this head is left out, the others are applied
            for (const QString &l : lines)
                sec.problem(l + QStringLiteral(" (that ablation is left out)"));
            continue;
        }
        out.push_back(e);
    }
    s.ablations = out;
    sec.readBool("shownClean", s.ablationsShownClean);
    sec.finish();
}

// "patching": {"corrupted": "…", "answer": " Mary", "wrong": " John", "sweep": "resid_pre" | "heads" |
// "heads_by_pos" | "mlp_out" | "path", "metric": "logit_diff" | "prob" | "kl", "receiver": "1.3:k" (the
// path sweep's; optional)} (attnviz/patching.h's names).
void readPatching(Section sec, SessionState &s)
{
    PatchingSettings &p = s.patching;
    readSentence(sec, "corrupted", p.corrupted);
    sec.readString("answer", p.answer);
    sec.readString("wrong", p.wrong);
    QString sweep = QString::fromLatin1(patchSweepName(p.sweep)), metric = QString::fromLatin1(patchMetricName(p.metric));
    sec.readString("sweep", sweep);
    sec.readString("metric", metric);
    QString receiver = QString::fromStdString(pathReceiverName(p.receiver));
    sec.readString("receiver", receiver);
    std::string why;
    if (!parsePathReceiver(receiver.toStdString(), p.receiver, why))
        sec.problem(QStringLiteral("%1: %2; %3 is used")
                        .arg(sec.key("receiver"), QString::fromStdString(why), QString::fromStdString(pathReceiverName(p.receiver))));
    bool found = false;
    for (PatchSweep w : {PatchSweep::ResidPre, PatchSweep::HeadsAllPositions, PatchSweep::HeadsByPosition, PatchSweep::MlpOut,
                         PatchSweep::Path})
        if (sweep == QLatin1String(patchSweepName(w))) {
            p.sweep = w;
            found = true;
        }
    if (!found)
        sec.problem(QStringLiteral("%1: %2 is not a sweep (resid_pre, heads, heads_by_pos, mlp_out, path); %3 is used")
                        .arg(sec.key("sweep"), quotedText(sweep), QLatin1String(patchSweepName(p.sweep))));
    found = false;
    for (PatchMetric m : {PatchMetric::LogitDiff, PatchMetric::Prob, PatchMetric::Kl})
        if (metric == QLatin1String(patchMetricName(m))) {
            p.metric = m;
            found = true;
        }
    if (!found)
        sec.problem(QStringLiteral("%1: %2 is not a metric (logit_diff, prob, kl); %3 is used")
                        .arg(sec.key("metric"), quotedText(metric), QLatin1String(patchMetricName(p.metric))));
    sec.finish();
}

// "alignment": {"layer": "mean" | 0.., "head": "mean" | 0.., "marks": [[target word, source word], …]}.
// A bad value is one problem naming its key; the rest is read.
void readAlignment(Section sec, SessionState &s)
{
    AlignmentSettings &a = s.alignment;
    const auto readChoice = [&sec](const char *k, const QString &what, int &out) {
        const QJsonValue v = sec.take(k);
        if (v.isUndefined())
            return;
        if (v.isString() && v.toString() == QLatin1String("mean")) {
            out = -1;
            return;
        }
        const double d = v.toDouble(std::nan(""));
        if (!v.isDouble() || d != std::floor(d) || d < 0 || d > 4095) {
            sec.problem(QStringLiteral("%1: %2 is not %3 (\"mean\", or 0 to 4095)").arg(sec.key(k), jsonText(v), what));
            return;
        }
        out = int(d);
    };
    readChoice("layer", QStringLiteral("a layer"), a.layer);
    readChoice("head", QStringLiteral("a head"), a.head);
    const QJsonValue marks = sec.take("marks");
    if (!marks.isUndefined()) {
        std::map<int, int> read;
        bool ok = marks.isArray();
        for (const QJsonValue &m : marks.toArray()) {
            const QJsonArray pair = m.toArray();
            const double t = pair.size() == 2 ? pair[0].toDouble(-1) : -1, w = pair.size() == 2 ? pair[1].toDouble(-1) : -1;
            if (!m.isArray() || pair.size() != 2 || !pair[0].isDouble() || !pair[1].isDouble() || t < 0 || w < 0
                || t != std::floor(t) || w != std::floor(w) || t > 1e6 || w > 1e6 || read.count(int(t))) {
                ok = false;
                break;
            }
            read[int(t)] = int(w);
        }
        if (ok)
            a.marks = read;
        else
            sec.problem(QStringLiteral("%1: %2 is not a list of [target word, source word] pairs, one per target word; "
                                       "nothing is marked")
                            .arg(sec.key("marks"), jsonText(marks)));
    }
    sec.finish();
}

QJsonValue pathOrNull(const QString &p) { return p.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(p); }

} // namespace

bool SessionState::operator==(const SessionState &o) const
{
    return sentence == o.sentence && keySentence == o.keySentence && paddedKeys == o.paddedKeys
        && customMask == o.customMask && settings == o.settings && tableKind == o.tableKind
        && tablePath == o.tablePath && tableName == o.tableName && model == o.model && projectionsFile == o.projectionsFile
        && stackWeightsFile == o.stackWeightsFile && tab == o.tab && headDisplay == o.headDisplay
        && selectedHead == o.selectedHead && selectedQuery == o.selectedQuery && layer == o.layer
        && showNumbers == o.showNumbers && linesThreshold == o.linesThreshold && linesScaleRows == o.linesScaleRows
        && normWeighted == o.normWeighted && meanPooling == o.meanPooling && target == o.target && attention == o.attention && ablations == o.ablations
        && ablationsShownClean == o.ablationsShownClean && lesson == o.lesson && appearance == o.appearance && compare == o.compare
        && patching == o.patching && alignment == o.alignment;
}

std::shared_ptr<const EmbeddingTable> seedTableByName(const QString &name)
{
    if (name == QLatin1String("journey"))
        return journeyTable();
    if (name == QLatin1String("bloem"))
        return bloemTable();
    return nullptr;
}

QString seedTableName(const std::shared_ptr<const EmbeddingTable> &t)
{
    if (t && t == journeyTable())
        return QStringLiteral("journey");
    if (t && t == bloemTable())
        return QStringLiteral("bloem");
    return {};
}

QJsonObject sessionToJson(const SessionState &s)
{
    QJsonArray padded;
    for (int i : s.paddedKeys)
        padded.append(i);
    QJsonArray custom;
    for (const auto &[q, k] : s.customMask)
        custom.append(QJsonArray{q, k});
    QJsonObject input{{QStringLiteral("sentence"), s.sentence},
                            {QStringLiteral("keySentence"), s.keySentence},
                            {QStringLiteral("paddedKeys"), padded},
                            {QStringLiteral("customMask"), custom}};
    if (!s.target.isEmpty()) // an encoder-decoder model's target, written only when typed
        input.insert(QStringLiteral("target"), s.target);
    if (s.beams > 0) // an encoder-decoder model's beams
        input.insert(QStringLiteral("beams"), s.beams);
    if (!s.sourceLanguage.isEmpty()) // an mBART folder's languages
        input.insert(QStringLiteral("sourceLanguage"), s.sourceLanguage);
    if (!s.targetLanguage.isEmpty())
        input.insert(QStringLiteral("targetLanguage"), s.targetLanguage);

    const QJsonObject settings = settingsToJson(s.settings);

    QJsonObject table{{QStringLiteral("kind"), nameOf(kTableKinds, s.tableKind)}};
    if (s.tableKind == TableKind::File)
        table.insert(QStringLiteral("path"), s.tablePath);
    else if (s.tableKind == TableKind::Seed)
        table.insert(QStringLiteral("name"), s.tableName);

    QJsonObject view{{QStringLiteral("tab"), s.tab},
                           {QStringLiteral("headDisplay"), nameOf(kHeadDisplays, s.headDisplay)},
                           {QStringLiteral("selectedHead"), s.selectedHead},
                           {QStringLiteral("selectedQuery"), s.selectedQuery},
                           {QStringLiteral("layer"), s.layer},
                           {QStringLiteral("showNumbers"), s.showNumbers},
                           {QStringLiteral("linesThreshold"), s.linesThreshold},
                           {QStringLiteral("linesScaleRows"), s.linesScaleRows}};
    if (s.normWeighted) // written only when on: the sessions written before it read the same
        view.insert(QStringLiteral("normWeighted"), true);
    if (s.meanPooling) // likewise
        view.insert(QStringLiteral("meanPooling"), true);
    if (s.attention != AttentionKind::Self) // the decoder's is the default: the sessions before it read the same
        view.insert(QStringLiteral("attention"), nameOf(kAttentionKinds, s.attention));

    const QJsonObject appearance{{QStringLiteral("theme"), themeId(s.appearance.theme)},
                                 {QStringLiteral("weightsMap"), sequentialId(s.appearance.sequential)},
                                 {QStringLiteral("signedMap"), divergingId(s.appearance.diverging)},
                                 {QStringLiteral("textScale"), s.appearance.fontScale}};
    const QString version = QCoreApplication::applicationVersion();
    QJsonObject out{{QStringLiteral("format"), kSessionFormat},
                       {QStringLiteral("version"), kSessionVersion},
                       {QStringLiteral("app"), version.isEmpty() ? QStringLiteral("attnviz")
                                                                 : QStringLiteral("attnviz ") + version},
                       {QStringLiteral("input"), input},
                       {QStringLiteral("settings"), settings},
                       {QStringLiteral("table"), table},
                       {QStringLiteral("projectionsFile"), pathOrNull(s.projectionsFile)},
                       {QStringLiteral("stackWeightsFile"), pathOrNull(s.stackWeightsFile)},
                       {QStringLiteral("model"), pathOrNull(s.model)},
                       {QStringLiteral("view"), view},
                       {QStringLiteral("appearance"), appearance}};
    if (!s.lesson.isEmpty())
        out.insert(QStringLiteral("lesson"), s.lesson);
    if (!s.ablations.empty()) { // written only with some: the sessions written before read the same
        QJsonArray heads;
        for (const Intervention &e : s.ablations)
            heads.append(QJsonObject{{QStringLiteral("layer"), e.layer},
                                     {QStringLiteral("head"), e.head},
                                     {QStringLiteral("kind"), QString::fromLatin1(editKindName(e.kind))}});
        out.insert(QStringLiteral("ablations"),
                   QJsonObject{{QStringLiteral("heads"), heads}, {QStringLiteral("shownClean"), s.ablationsShownClean}});
    }
    if (!s.patching.empty()) // written only when set: the sessions written before read the same
        out.insert(QStringLiteral("patching"),
                   QJsonObject{{QStringLiteral("corrupted"), s.patching.corrupted},
                               {QStringLiteral("answer"), s.patching.answer},
                               {QStringLiteral("wrong"), s.patching.wrong},
                               {QStringLiteral("sweep"), QString::fromLatin1(patchSweepName(s.patching.sweep))},
                               {QStringLiteral("metric"), QString::fromLatin1(patchMetricName(s.patching.metric))},
                               {QStringLiteral("receiver"), QString::fromStdString(pathReceiverName(s.patching.receiver))}});
    if (!s.alignment.isDefault()) { // written only when set: the sessions written before read the same
        const auto choice = [](int v) { return v < 0 ? QJsonValue(QStringLiteral("mean")) : QJsonValue(v); };
        QJsonArray marks;
        for (const auto &[t, w] : s.alignment.marks)
            marks.append(QJsonArray{t, w});
        out.insert(QStringLiteral("alignment"), QJsonObject{{QStringLiteral("layer"), choice(s.alignment.layer)},
                                                            {QStringLiteral("head"), choice(s.alignment.head)},
                                                            {QStringLiteral("marks"), marks}});
    }
    if (s.compare.present)
        out.insert(QStringLiteral("compare"),
                   QJsonObject{{QStringLiteral("sentence"), s.compare.sentence},
                               {QStringLiteral("keySentence"), s.compare.keySentence},
                               {QStringLiteral("settings"), settingsToJson(s.compare.settings)},
                               {QStringLiteral("seedTable"), s.compare.seedTable}});
    return out;
}

bool parseSessionText(const QByteArray &text, QJsonObject &out, QString &error)
{
    // the core's checks first (nesting, duplicate keys, numbers beyond float64): QJsonDocument
    // would let the last of two keys win
    static const std::string kName = "session";
    if (const Status st = checkJsonText(text.toStdString(), kName); !st) {
        error = QString::fromStdString(st.message.substr(kName.size() + 2));
        return false;
    }
    QJsonParseError pe{};
    const QJsonDocument doc = QJsonDocument::fromJson(text, &pe);
    if (pe.error != QJsonParseError::NoError) {
        error = QStringLiteral("%1 at offset %2").arg(pe.errorString()).arg(pe.offset);
        return false;
    }
    if (!doc.isObject()) {
        error = QStringLiteral("not an attnviz session (the file holds no JSON object)");
        return false;
    }
    out = doc.object();
    return true;
}

bool sessionFromJson(const QJsonObject &json, SessionState &out, QStringList *problems)
{
    QStringList lines;
    const QJsonValue format = json.value(QLatin1String("format"));
    if (format.toString() != kSessionFormat) {
        lines << (format.isUndefined() ? QStringLiteral("not an attnviz session (no \"format\": \"%1\")").arg(kSessionFormat)
                                       : QStringLiteral("not an attnviz session (\"format\" is %1, not \"%2\")")
                                             .arg(jsonText(format), kSessionFormat));
        if (problems)
            *problems << lines;
        return false;
    }
    const QJsonValue versionValue = json.value(QLatin1String("version"));
    const double version = versionValue.toDouble(0);
    if (!versionValue.isDouble() || version < 1 || version != std::floor(version)) {
        if (problems)
            *problems << QStringLiteral("version: %1 is not a session format version (1, 2, …)").arg(jsonText(versionValue));
        return false;
    }
    const bool newer = version > kSessionVersion;
    if (newer)
        lines << QStringLiteral("written by a newer attnviz (session format version %1; this one reads version %2): "
                                "opened what it understands")
                     .arg(QString::number(version, 'g', 17)) // any size: 1e78 is a whole number too
                     .arg(kSessionVersion);

    SessionState s = out;
    Section top(json, QString(), &lines, newer);
    top.take("format");
    top.take("version");
    QString app;
    top.readString("app", app);
    readInput(top.sub("input"), s);
    readSettings(top.sub("settings"), s.settings);
    bool hasTable = false;
    Section table = top.sub("table", &hasTable);
    if (hasTable)
        readTable(table, s);
    top.readPath("projectionsFile", s.projectionsFile);
    top.readPath("stackWeightsFile", s.stackWeightsFile);
    top.readPath("model", s.model);
    if (version < 2 && s.model == kBundledModelArg)
        s.model = kBundledGpt2Arg; // the bundled model when the file was written
    readView(top.sub("view"), s);
    bool hasAppearance = false, hasCompare = false;
    Section appearance = top.sub("appearance", &hasAppearance);
    if (hasAppearance)
        readAppearance(appearance, s.appearance);
    Section compare = top.sub("compare", &hasCompare);
    if (hasCompare)
        readCompare(compare, s.compare);
    top.readString("lesson", s.lesson);
    bool hasAblations = false;
    Section ablations = top.sub("ablations", &hasAblations);
    if (hasAblations)
        readAblations(ablations, s);
    bool hasPatching = false;
    Section patching = top.sub("patching", &hasPatching);
    if (hasPatching)
        readPatching(patching, s);
    bool hasAlignment = false;
    Section alignment = top.sub("alignment", &hasAlignment);
    if (hasAlignment)
        readAlignment(alignment, s);
    top.finish();

    out = s;
    if (problems)
        *problems << lines;
    return true;
}

} // namespace attnviz::ui
