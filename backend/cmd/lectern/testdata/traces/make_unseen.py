#!/usr/bin/env python3
"""Synthetic chapter-release trace for exercising a polling scheduler.

Writes a CSV with header ``series,site,readers,released_at``: one row per
chapter release (RFC 3339 UTC, whole seconds), plus exactly one row with an
empty ``released_at`` for every Series that never releases inside the span.

Span: 8 weeks from 2026-10-05T00:00:00Z (a Monday) to 2026-11-30T00:00:00Z
(exclusive).  Standard library only; fully determined by --seed.

Five Sites are modelled (see README.md for the prose description):
  toonday    Korean-style webtoon portal, fixed weekday + fixed portal hour
  mdx        MangaDex-like aggregator, many scanlation groups, heavy-tailed gaps
  rrl        Royal Road-like web-novel site, author-scheduled posts (local time, DST)
  scanhaus   one scanlation group's site, evening batch drops 2-3 days a week
  tinyreads  small slow site, any hour, many dormant
"""

import argparse
import csv
import math
import random
import sys
from collections import Counter, defaultdict
from datetime import date, datetime, timedelta, timezone

START = datetime(2026, 10, 5, tzinfo=timezone.utc)  # Monday
DAYS = 56
END = START + timedelta(days=DAYS)
START_DATE = START.date()
HEADER = "series,site,readers,released_at"

# Time zones: (offset before transition, offset after, local date of transition)
# EU/UK leave summer time on Sun 2026-10-25, US on Sun 2026-11-01.
# AU_E is already on AEDT (since 2026-10-04) for the whole span.
TZ = {
    "UTC": (0, 0, None),
    "KST": (9, 9, None),
    "US_E": (-4, -5, date(2026, 11, 1)),
    "US_C": (-5, -6, date(2026, 11, 1)),
    "US_W": (-7, -8, date(2026, 11, 1)),
    "UK": (1, 0, date(2026, 10, 25)),
    "CET": (2, 1, date(2026, 10, 25)),
    "BRT": (-3, -3, None),
    "SEA": (7, 7, None),
    "PHT": (8, 8, None),
    "AU_E": (11, 11, None),
}


def local_to_utc(tz, day, sec):
    """UTC datetime for local calendar day index `day` (0 = 2026-10-05) at
    `sec` seconds after local midnight (may be <0 or >86400)."""
    before, after, trans = TZ[tz]
    d = START_DATE + timedelta(days=day)
    off = after if (trans is not None and d >= trans) else before
    return START + timedelta(days=day, seconds=int(math.floor(sec - off * 3600)))


def utc_at(day, sec):
    return START + timedelta(days=day, seconds=int(math.floor(sec)))


def in_span(dt):
    return START <= dt < END


def wchoice(rng, pairs):
    total = sum(w for _, w in pairs)
    x = rng.random() * total
    for v, w in pairs:
        x -= w
        if x < 0:
            return v
    return pairs[-1][0]


def draw_readers(rng, alpha, cap=50000):
    """Heavy-tailed (Pareto) follower count: most 1-5, a few in the hundreds."""
    return max(1, min(cap, int(rng.paretovariate(alpha))))


def popscore(readers):
    """0 for a 1-reader Series, 1 for ~300+ readers."""
    return min(1.0, math.log10(readers) / 2.5)


# ---------------------------------------------------------------------------
# 1. toonday: Korean-style webtoon portal
# ---------------------------------------------------------------------------
def gen_toonday(rng, n):
    out = []
    MAIN = 15 * 3600  # 15:00 UTC = 00:00 KST
    SECOND = 3 * 3600  # 03:00 UTC = 12:00 KST (noon slot)
    REST_WEEK = 4  # 2026-11-02..08: portal-wide rest week
    HANGUL_DAY = 3  # 2026-10-08 15:00Z = 2026-10-09 00:00 KST (Hangul Day)
    weekday_w = [(0, 1.0), (1, 1.0), (2, 1.05), (3, 1.0), (4, 1.0), (5, 1.1), (6, 1.15)]
    for i in range(n):
        sid = f"td-{i + 1:05d}"
        r = draw_readers(rng, 0.85)
        pop = popscore(r)
        if rng.random() < 0.03 * (1 - 0.7 * pop):  # completed / indefinite hiatus
            out.append((sid, "toonday", r, []))
            continue
        days = [wchoice(rng, weekday_w)]
        if rng.random() < 0.10:
            days.append(wchoice(rng, [p for p in weekday_w if p[0] != days[0]]))
        hour = SECOND if rng.random() < 0.12 else MAIN
        start_day, end_day, premiere = 0, DAYS, False
        if rng.random() < 0.06:  # new series premieres mid-span with 3 episodes
            start_day, premiere = rng.randrange(7, DAYS - 7), True
        if rng.random() < 0.06:  # season / series finale mid-span
            end_day = rng.randrange(max(start_day + 7, 7), DAYS)
        hiatus = None
        if rng.random() < 0.15:  # hiatus of 2-8 weeks, may straddle the span edges
            h0 = rng.randrange(-28, DAYS)
            hiatus = (h0, h0 + rng.randint(14, 56))
        double_ep = rng.random() < 0.02
        skip_p = 0.03 * (1 - 0.5 * pop)
        rests = rng.random() < 0.75
        late_author = rng.random() < 0.05
        times, first = [], True
        for d in range(start_day, end_day):
            if d % 7 not in days:  # START is Monday, so d % 7 is the weekday
                continue
            if hiatus and hiatus[0] <= d < hiatus[1]:
                continue
            if d // 7 == REST_WEEK and rests:
                continue
            if d == HANGUL_DAY and rng.random() < 0.4:
                continue
            if not first and rng.random() < skip_p:
                continue
            if premiere and first:
                k = 3
            elif double_ep:
                k = 2
            elif rng.random() < 0.01:
                k = rng.choice([2, 3])
            else:
                k = 1
            first = False
            u = rng.random()
            if late_author and u < 0.3:
                late = rng.uniform(1200, 9000)
            elif u < 0.85:
                late = rng.uniform(0, 240)
            elif u < 0.98:
                late = 240 + rng.expovariate(1 / 300)
            else:
                late = rng.uniform(1200, 7200)  # upload glitch, hours late
            base = hour + late
            for j in range(k):
                times.append(utc_at(d, base + j * rng.randint(0, 3)))
        out.append((sid, "toonday", r, times))
    return out


# ---------------------------------------------------------------------------
# 2. mdx: MangaDex-like aggregator
# ---------------------------------------------------------------------------
MDX_TZ = [("US_E", .25), ("US_C", .08), ("US_W", .12), ("UK", .08), ("CET", .2),
          ("BRT", .09), ("SEA", .1), ("PHT", .08)]


def mdx_group(rng, kind):
    """One scanlation group's uploads for one Series."""
    tz = wchoice(rng, MDX_TZ)
    anytime = rng.random() < 0.15
    h0 = rng.triangular(17, 25.5, 21) * 3600  # local evening peak
    hsd = rng.uniform(0.7, 2.0) * 3600

    def tod():
        return rng.uniform(0, 86400) if anytime else h0 + rng.gauss(0, hsd)

    if kind == "weekly":
        mean, sd = rng.uniform(6, 9), rng.uniform(1.0, 2.5)

        def gap():
            g = max(0.5, rng.gauss(mean, sd))
            if rng.random() < 0.07:
                g += rng.uniform(7, 30)  # raw late / member busy
            return g
        burst_p = 0.05
    elif kind == "slow":
        mean, sig = rng.uniform(8, 28), rng.uniform(0.3, 0.7)

        def gap():
            return mean * rng.lognormvariate(-sig * sig / 2, sig)
        burst_p = 0.12
    else:  # erratic, heavy-tailed
        xm, a = rng.uniform(2, 7), rng.uniform(0.9, 1.4)

        def gap():
            return min(150.0, xm * rng.paretovariate(a))
        burst_p = 0.25

    times = []
    t = -rng.random() * gap()  # phase: last upload happened before the span
    stop = DAYS + 1
    if rng.random() < 0.05:  # group drops the project mid-span
        stop = rng.uniform(7, DAYS)
    while True:
        t += gap()
        if t >= stop:
            break
        day = int(math.floor(t))
        sec = tod()
        k = 1
        if rng.random() < burst_p:  # catch-up burst
            k = 2 + min(13, int(rng.expovariate(1 / 2.5)))
        slow_spread = rng.random() < 0.3
        for _ in range(k):
            times.append(local_to_utc(tz, day, sec))
            sec += rng.uniform(1200, 5400) if slow_spread else rng.expovariate(1 / 240) + 20
    return times


def mdx_official(rng):
    """Official simulpub mirrored onto the aggregator: fixed weekday 15:00 UTC."""
    wd = rng.randrange(7)
    times = []
    for d in range(wd, DAYS, 7):
        if d // 7 == 3:  # magazine combined-issue break week
            continue
        if rng.random() < 0.08:
            continue
        base = 15 * 3600 + rng.uniform(0, 600)
        k = 2 if rng.random() < 0.03 else 1
        for j in range(k):
            times.append(utc_at(d, base + j * rng.randint(1, 30)))
    return times


def gen_mdx(rng, n):
    out = []
    for i in range(n):
        sid = f"md-{i + 1:05d}"
        r = draw_readers(rng, 0.9)
        pop = popscore(r)
        if rng.random() < 0.07 * (1 - 0.6 * pop):  # abandoned / licensed & removed
            out.append((sid, "mdx", r, []))
            continue
        kind = wchoice(rng, [("official", 0.02 + 0.12 * pop), ("weekly", 0.15 + 0.30 * pop),
                             ("slow", 0.40 - 0.10 * pop), ("erratic", 0.43 - 0.32 * pop)])
        times = mdx_official(rng) if kind == "official" else mdx_group(rng, kind)
        if rng.random() < 0.06:  # second group sniping / dual uploads
            times += mdx_group(rng, rng.choice(["weekly", "erratic"]))
        out.append((sid, "mdx", r, times))
    return out


# ---------------------------------------------------------------------------
# 3. rrl: Royal Road-like web-novel site
# ---------------------------------------------------------------------------
RR_TZ = [("US_E", .28), ("US_C", .1), ("US_W", .14), ("UK", .12), ("CET", .1),
         ("AU_E", .08), ("PHT", .08), ("SEA", .1)]


def gen_rrl(rng, n):
    out = []
    for i in range(n):
        sid = f"rr-{i + 1:05d}"
        r = draw_readers(rng, 1.05)
        pop = popscore(r)
        if rng.random() < 0.07 * (1 - 0.6 * pop):
            out.append((sid, "rrl", r, []))
            continue
        tz = "UTC" if rng.random() < 0.2 else wchoice(rng, RR_TZ)  # some schedule in UTC
        kind = wchoice(rng, [("daily", 0.30 + 0.2 * pop), ("mwf", 0.18), ("few", 0.27),
                             ("irregular", 0.25 - 0.2 * pop)])
        # fixed schedule time (local), usually on the hour
        hh = wchoice(rng, [(h, 2.0 if h in (0, 6, 8, 12, 17, 18, 20) else 1.0) for h in range(24)])
        mm = wchoice(rng, [(0, .6), (30, .12), (15, .04), (45, .04), (None, .2)])
        if mm is None:
            mm = rng.randrange(60)
        sched = hh * 3600 + mm * 60
        if kind == "daily":
            variant = wchoice(rng, [("all", .7), ("wkday", .2), ("six", .1)])
            sched_days = {"all": set(range(7)), "wkday": set(range(5)),
                          "six": set(range(6))}[variant]
        elif kind == "mwf":
            sched_days = {0, 2, 4} if rng.random() < 0.8 else {1, 3, 5}
        else:
            sched_days = None
        miss_p = rng.uniform(0.02, 0.15) * (1 - 0.5 * pop)
        dbl_p = rng.uniform(0.0, 0.06)
        brk = None
        if rng.random() < 0.12:
            b0 = rng.randrange(-7, DAYS)
            brk = (b0, b0 + rng.randint(7, 21))
        stop = DAYS + 2
        if rng.random() < 0.06:  # completed / stubbed for KU / abandoned
            stop = rng.randrange(5, DAYS)
        launch = None
        if rng.random() < 0.15:  # new story
            launch = rng.randrange(-14, DAYS - 3)

        def manual():
            return rng.uniform(8, 24.5) * 3600

        def sched_sec():
            s = sched + rng.randint(0, 9)
            if rng.random() < 0.05:
                s += rng.uniform(10, 120)
            return s

        times = []

        def post(day, sec, scheduled):
            times.append(local_to_utc(tz, day, sec))
            if rng.random() < dbl_p:  # double post
                if scheduled and rng.random() < 0.6:
                    times.append(local_to_utc(tz, day, sec + rng.randint(0, 120)))
                else:
                    times.append(local_to_utc(tz, day, sec + rng.uniform(3600, 6 * 3600)))

        first_regular = -1
        if launch is not None:
            # launch dump: 3-10 chapters in the first hours
            sec = manual()
            for _ in range(rng.randint(3, 10)):
                times.append(local_to_utc(tz, launch, sec))
                sec += rng.uniform(30, 1200)
            # first two weeks: 1-2 chapters a day
            for d in range(launch + 1, launch + 14):
                if d >= stop:
                    break
                if rng.random() < 0.9:
                    for _ in range(2 if rng.random() < 0.5 else 1):
                        post(d, sched_sec() if sched_days else manual(), bool(sched_days))
            first_regular = launch + 14

        missing = False
        next_irr = first_regular + rng.lognormvariate(math.log(3), 0.8) * rng.random()
        week_days = {}
        for d in range(max(-1, first_regular), min(DAYS + 1, stop)):
            if brk and brk[0] <= d < brk[1]:
                continue
            # sick days come in streaks
            if missing:
                missing = rng.random() < 0.3
            else:
                missing = rng.random() < miss_p
            if kind in ("daily", "mwf"):
                if d % 7 in sched_days and not missing:
                    post(d, sched_sec(), True)
            elif kind == "few":
                w = d // 7
                if w not in week_days:
                    week_days[w] = set(rng.sample(range(7), rng.choice([2, 2, 3])))
                if d % 7 in week_days[w] and not missing:
                    post(d, manual(), False)
            else:
                while next_irr < d + 1:
                    if next_irr >= d and not missing:
                        post(d, manual(), False)
                    next_irr += rng.lognormvariate(math.log(4), 0.8)
        out.append((sid, "rrl", r, times))
    return out


# ---------------------------------------------------------------------------
# 4. scanhaus: one group's Madara-style site, evening batch drops
# ---------------------------------------------------------------------------
def gen_scanhaus(rng, n, stats):
    weeks = DAYS // 7
    # site-level drop calendar: Tue + Fri every week, Sun in ~60% of weeks
    drops = []  # (week, slot, day, start_sec, duration_sec)
    for w in range(weeks):
        slots = [1, 4] + ([6] if rng.random() < 0.6 else [])
        for s, wd in enumerate(slots):
            day = w * 7 + wd
            if rng.random() < 0.06:  # "drop delayed to tomorrow"
                day += 1
            st = 19.5 * 3600 + rng.gauss(0, 1200)
            if rng.random() < 0.10:
                st += rng.uniform(3600, 3 * 3600)
            drops.append((w, s, day, st, rng.uniform(3600, 7200)))
    by_week = defaultdict(list)
    for idx, dr in enumerate(drops):
        by_week[dr[0]].append(idx)
    content = defaultdict(list)  # drop idx -> list of (series index, nchapters)

    series = []
    for i in range(n):
        sid = f"sh-{i + 1:05d}"
        r = draw_readers(rng, 1.0)
        pop = popscore(r)
        series.append((sid, r))
        kind = wchoice(rng, [("dormant", 0.04 * (1 - 0.6 * pop)), ("core", 0.05 + 0.10 * pop),
                             ("new", 0.02), ("slow", 0.19), ("stale", 0.70 - 0.13 * pop)])
        home = wchoice(rng, [(0, .45), (1, .4), (2, .15)])  # Tue / Fri / Sun drop

        def pick(w, home_p):
            ids = by_week[w]
            own = [x for x in ids if drops[x][1] == home]
            if own and rng.random() < home_p:
                return own[0]
            return rng.choice(ids)

        if kind == "dormant":
            continue
        if kind in ("core", "new"):
            w0, owed = 0, 0
            if kind == "new":
                w0 = rng.randrange(0, weeks)
                content[pick(w0, 0.5)].append((i, rng.randint(3, 8)))  # launch batch
                w0 += 1
            p_rel = 0.82 + 0.12 * pop
            for w in range(w0, weeks):
                if rng.random() < p_rel:
                    k = 1 + (1 if owed and rng.random() < 0.5 else 0)
                    if rng.random() < 0.04:
                        k += 1
                    owed = 0
                    content[pick(w, 0.8)].append((i, k))
                else:
                    owed = 1
        elif kind == "slow":
            period = rng.randint(3, 6)
            w = rng.randrange(period)
            while w < weeks:
                if rng.random() < 0.85:
                    content[pick(w, 0.5)].append((i, 1))
                w += period + (1 if rng.random() < 0.3 else 0)
        else:  # stale: raws stalled / low priority
            m = wchoice(rng, [(0, .15), (1, .70), (2, .13), (3, .02)])
            for w in rng.sample(range(weeks), m):
                content[pick(w, 0.3)].append((i, 1))

    times = defaultdict(list)
    sizes = []
    for idx, (w, s, day, st, dur) in enumerate(drops):
        items = content.get(idx, [])
        if not items:
            continue
        rng.shuffle(items)
        chapters = [si for si, k in items for _ in range(k)]
        offs = sorted(rng.uniform(0, dur) for _ in chapters)
        for si, o in zip(chapters, offs):
            times[si].append(utc_at(day, st + o))
        sizes.append(len(chapters))
    stats["scanhaus_drop_sizes"] = sizes
    return [(sid, "scanhaus", r, times.get(i, [])) for i, (sid, r) in enumerate(series)]


# ---------------------------------------------------------------------------
# 5. tinyreads: small slow site
# ---------------------------------------------------------------------------
def gen_tinyreads(rng, n):
    out = []
    for i in range(n):
        sid = f"tr-{i + 1:05d}"
        r = draw_readers(rng, 1.6)
        pop = popscore(r)
        if rng.random() < 0.30 * (1 - 0.5 * pop):
            out.append((sid, "tinyreads", r, []))
            continue
        times = []
        if rng.random() < 0.10:  # posts once, then vanishes
            times.append(utc_at(0, rng.uniform(0, DAYS * 86400)))
        else:
            mean = rng.uniform(7, 21)
            stop = DAYS if rng.random() > 0.12 else rng.uniform(7, DAYS)
            t = -rng.random() * mean
            while True:
                g = mean * rng.uniform(0.6, 1.4)
                if rng.random() < 0.15:
                    g *= 2  # author busy
                t += g
                if t >= stop:
                    break
                times.append(utc_at(0, t * 86400))
                if rng.random() < 0.05:
                    times.append(utc_at(0, t * 86400 + rng.uniform(1800, 3 * 3600)))
        out.append((sid, "tinyreads", r, times))
    return out


# ---------------------------------------------------------------------------
def generate(seed):
    rng = random.Random(seed)
    stats = {}
    allser = []
    allser += gen_toonday(random.Random(rng.random()), 700)
    allser += gen_mdx(random.Random(rng.random()), 1000)
    allser += gen_rrl(random.Random(rng.random()), 600)
    allser += gen_scanhaus(random.Random(rng.random()), 400, stats)
    allser += gen_tinyreads(random.Random(rng.random()), 300)
    return allser, stats


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def write(allser, path):
    rows = []
    for sid, site, r, times in allser:
        ts = sorted(t for t in times if in_span(t))
        if not ts:
            rows.append((sid, site, r, ""))
        else:
            rows += [(sid, site, r, iso(t)) for t in ts]
    with open(path, "w", newline="") as f:
        f.write(HEADER + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerows(rows)
    return len(rows)


def verify(path):
    """Independent re-read of the file; raises on any violation, returns stats."""
    with open(path, newline="") as f:
        first = f.readline()
        assert first == HEADER + "\n", repr(first)
        rd = csv.reader(f)
        readers, site_of, rel, empty = {}, {}, Counter(), Counter()
        hours = defaultdict(Counter)
        nrows = 0
        for row in rd:
            nrows += 1
            assert len(row) == 4, row
            sid, site, r, ts = row
            assert sid and site
            ri = int(r)
            assert ri > 0 and str(ri) == r
            assert readers.setdefault(sid, ri) == ri, f"readers differ for {sid}"
            assert site_of.setdefault(sid, site) == site, f"site differs for {sid}"
            if ts == "":
                empty[sid] += 1
            else:
                dt = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
                assert iso(dt) == ts
                assert START <= dt < END, ts
                rel[sid] += 1
                hours[site][dt.hour] += 1
        for sid, c in empty.items():
            assert c == 1 and rel[sid] == 0, f"bad dormant rows for {sid}"
    return dict(rows=nrows, readers=readers, site_of=site_of, rel=rel, empty=empty, hours=hours)


def report(v, stats, out=sys.stderr):
    site_of, rel, empty, readers = v["site_of"], v["rel"], v["empty"], v["readers"]
    sites = ["toonday", "mdx", "rrl", "scanhaus", "tinyreads"]
    p = lambda *a: print(*a, file=out)
    p(f"rows={v['rows']} series={len(site_of)} releases={sum(rel.values())} "
      f"dormant={len(empty)} ({100 * len(empty) / len(site_of):.1f}%)")
    p(f"{'site':10} {'series':>6} {'releases':>8} {'dormant':>7} {'rel/ser/wk':>10}  readers p50/p90/p99/max")
    for s in sites:
        ids = [k for k, v2 in site_of.items() if v2 == s]
        nrel = sum(rel[k] for k in ids)
        nd = sum(1 for k in ids if k in empty)
        rs = sorted(readers[k] for k in ids)
        q = lambda f: rs[min(len(rs) - 1, int(f * len(rs)))]
        p(f"{s:10} {len(ids):6d} {nrel:8d} {nd:7d} {nrel / len(ids) / 8:10.2f}  "
          f"{q(.5)}/{q(.9)}/{q(.99)}/{rs[-1]}")
    rs = sorted(readers.values())
    p(f"readers overall: <=5: {sum(1 for x in rs if x <= 5) / len(rs):.0%}, "
      f">=100: {sum(1 for x in rs if x >= 100)}, max {rs[-1]}")
    for s in sites:
        h = v["hours"][s]
        tot = sum(h.values()) or 1
        p(f"hour-of-day UTC {s:9}: " + " ".join(f"{100 * h[x] / tot:.0f}" for x in range(24)))
    sz = sorted(stats.get("scanhaus_drop_sizes", []))
    if sz:
        p(f"scanhaus drops: n={len(sz)} min={sz[0]} median={sz[len(sz) // 2]} max={sz[-1]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=90210)
    ap.add_argument("--out", default="/tmp/unseen.csv")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    allser, stats = generate(a.seed)
    write(allser, a.out)
    v = verify(a.out)
    if not a.quiet:
        print(f"wrote {a.out}", file=sys.stderr)
        report(v, stats)


if __name__ == "__main__":
    main()
