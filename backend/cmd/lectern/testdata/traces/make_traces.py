#!/usr/bin/env python3
"""Writes recorded-style release traces for `lectern simulate --trace`.

Three release models, unlike the simulator's own generator (which draws
per-Series weekly/daily rhythms with Gaussian jitter and Poisson irregulars):

bursty  manga Sites that publish in Site-wide drops at fixed KST hours: a
        drop's chapters go up one after another within minutes (an uploader's
        batch), some days slip to the next day, some releases are several
        chapters at once, Series go on hiatus for weeks or stop for good, a few
        scanlation groups release at random; 12% of Series no Reader holds.
novels  authors on their own log-normal pace; the slower ones post in their
        local evening in one of five time zones, the faster ones at any hour;
        hiatuses, and mass releases of several chapters at once.
sites   ten Sites of 3 to 40 Series each times the scale (log-uniform),
        each of one kind: webtoon (weekly chapters, most at the Site's hour),
        scanlation (groups releasing at random, Poisson gaps of days, some
        chapters in pairs), novel (as above) or a mix; 10% unheld. Small Sites
        get small budgets, as `--budget` gives every Site R x its Series.

Usage: make_traces.py [--scale S] [--weeks W] [--out DIR]
The committed traces are scale 1 (small); the closing note's figures use
--scale 6 --out /tmp/traces. Seeds are fixed: the same flags give the same
files, byte for byte.
"""
import argparse
import math
import os
import random
from datetime import datetime, timedelta, timezone

START = datetime(2026, 1, 5, tzinfo=timezone.utc)  # a Monday


def readers(r):
    # Zipf-like: most Series have one Reader, a few many.
    return min(200, int(1 / max(1e-9, r.random()) ** 0.9))


def bursty(scale, weeks, seed=22001):
    r = random.Random(seed)
    rows = []
    end = START + timedelta(weeks=weeks)
    sites = [("inkdrop", [0, 10]), ("nightshelf", [22]), ("tidescans", [12, 19])]  # drop hours, KST
    for site, drops in sites:
        n = 70 * scale
        for k in range(n):
            key = f"{site}:s{k}"
            rd = 0 if r.random() < 0.12 else readers(r)
            rel = []
            kind = r.random()
            if kind < 0.08:  # a scanlation group at random hours
                gap = 24 * (2 + 6 * r.random())
                t = START + timedelta(hours=r.expovariate(1 / gap))
                while t < end:
                    rel.append(t)
                    t += timedelta(hours=r.expovariate(1 / gap))
            elif kind < 0.12:  # dormant
                pass
            else:
                days = [r.randrange(7)] if kind < 0.85 else [d for d in range(7)] if kind < 0.9 else sorted(r.sample(range(7), 2))
                hour = r.choice(drops)
                hiatus = None
                if r.random() < 0.1:
                    hs = START + timedelta(days=r.uniform(0, weeks * 7))
                    hiatus = (hs, hs + timedelta(weeks=r.randint(2, 4)))
                stop = end
                if r.random() < 0.05:
                    stop = START + timedelta(days=r.uniform(7, weeks * 7))
                for w in range(weeks + 1):
                    for d in days:
                        # KST is UTC+9.
                        base = START + timedelta(weeks=w, days=d, hours=hour - 9)
                        if r.random() < 0.06:
                            continue  # skipped
                        if r.random() < 0.10:
                            base += timedelta(days=1)  # slipped a day
                        if hiatus and hiatus[0] <= base < hiatus[1]:
                            continue
                        if not (START <= base < stop):
                            continue
                        rel.append(base)  # the drop time; the batch offset below
                # batch uploads: the same drop carries several chapters
                extra = [t for t in rel if r.random() < 0.05 for _ in range(r.randint(1, 3))]
                rel += extra
            rows.append((key, site, rd, rel))
    # Site-wide drops: every Series' chapter of one drop goes up one after
    # another, a few minutes apart in random order.
    out = []
    by_drop = {}
    for key, site, rd, rel in rows:
        for t in rel:
            by_drop.setdefault((site, t), []).append(key)
    offsets = {}
    for (site, t), keys in by_drop.items():
        r.shuffle(keys)
        at = t + timedelta(seconds=r.expovariate(1 / 120))
        for key in keys:
            offsets.setdefault((key, t), []).append(at)
            at += timedelta(seconds=r.expovariate(1 / 40))
    for key, site, rd, rel in rows:
        times = []
        seen = {}
        for t in rel:
            i = seen.get(t, 0)
            seen[t] = i + 1
            times.append(offsets[(key, t)][i])
        out.append((key, site, rd, sorted(x for x in times if x < end)))
    return out


def novels(scale, weeks, seed=22002):
    r = random.Random(seed)
    out = []
    end = START + timedelta(weeks=weeks)
    zones = [-5, 0, 1, 8, 9]
    for site in ("quillhall", "longform"):
        for k in range(25 * scale):
            key = f"{site}:n{k}"
            rd = 0 if r.random() < 0.08 else readers(r)
            if r.random() < 0.07:
                out.append((key, site, rd, []))
                continue
            gap = math.exp(r.gauss(math.log(36), 0.8))  # hours, median 1.5 days
            zone = r.choice(zones)
            evening = gap > 48
            hiatus = None
            if r.random() < 0.12:
                hs = START + timedelta(days=r.uniform(0, weeks * 7))
                hiatus = (hs, hs + timedelta(days=r.uniform(7, 28)))
            rel = []
            t = START + timedelta(hours=r.uniform(0, gap))
            while t < end:
                at = t
                if evening:
                    # the author's local evening, 18:00 to 23:00
                    local = at + timedelta(hours=zone)
                    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
                    local = day + timedelta(hours=18 + r.uniform(0, 5))
                    at = local - timedelta(hours=zone)
                if not (hiatus and hiatus[0] <= at < hiatus[1]) and START <= at < end:
                    rel.append(at)
                    if r.random() < 0.04:  # a mass release
                        for j in range(r.randint(3, 9)):
                            rel.append(at + timedelta(minutes=r.uniform(0, 30)))
                t += timedelta(hours=max(0.5, r.gauss(gap, gap * 0.35)))
            out.append((key, site, rd, sorted(x for x in rel if x < end)))
    return out


def sites(scale, weeks, seed=22003):
    r = random.Random(seed)
    out = []
    end = START + timedelta(weeks=weeks)
    # Every Site's size, kind and hour first, so that a larger scale has the
    # same Sites, each scale times larger.
    shape = [(int(math.exp(r.uniform(math.log(3), math.log(40)))) * scale,
              r.choice(["webtoon", "scan", "novel", "mixed"]), r.randrange(24)) for _ in range(10)]
    for k, (size, kind, hour) in enumerate(shape):
        for j in range(size):
            key = f"site{k}:m{j}"
            rd = 0 if r.random() < 0.1 else readers(r)
            style = kind
            if kind == "mixed":
                style = r.choice(["webtoon", "webtoon", "scan", "novel"])
            rel = []
            if style == "webtoon":
                day, jitter = r.randrange(7), r.choice([5, 20, 60])
                at = hour if r.random() < 0.7 else r.randrange(24)
                for w in range(weeks + 1):
                    if r.random() < 0.07:
                        continue  # skipped
                    t = START + timedelta(weeks=w, days=day, hours=at, minutes=r.gauss(0, jitter))
                    if r.random() < 0.03:
                        t += timedelta(hours=r.uniform(-12, 12))  # off schedule
                    rel.append(t)
            elif style == "scan":
                gap = 24 * math.exp(r.gauss(math.log(5), 0.7))  # hours
                t = START + timedelta(hours=r.uniform(0, gap))
                while t < end:
                    rel.append(t)
                    if r.random() < 0.15:
                        rel.append(t + timedelta(minutes=r.uniform(1, 60)))
                    t += timedelta(hours=r.expovariate(1 / gap))
            else:
                if r.random() < 0.1:
                    out.append((key, f"site{k}", rd, []))
                    continue
                gap = math.exp(r.gauss(math.log(30), 0.9))
                zone = r.choice([-5, 0, 8, 9])
                t = START + timedelta(hours=r.uniform(0, gap))
                while t < end:
                    at = t
                    if gap > 40:
                        local = at + timedelta(hours=zone)
                        day0 = local.replace(hour=0, minute=0, second=0, microsecond=0)
                        at = day0 + timedelta(hours=19 + r.uniform(0, 4)) - timedelta(hours=zone)
                    rel.append(at)
                    t += timedelta(hours=max(1, r.gauss(gap, gap * 0.3)))
            out.append((key, f"site{k}", rd, sorted(x for x in rel if START <= x < end)))
    return out


def write(path, series):
    with open(path, "w", newline="") as f:
        f.write("series,site,readers,released_at\n")
        for key, site, rd, rel in series:
            if not rel:
                f.write(f"{key},{site},{rd},\n")
            for t in rel:
                f.write(f"{key},{site},{rd},{t.strftime('%Y-%m-%dT%H:%M:%SZ')}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--weeks", type=int, default=6)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    suffix = "" if a.scale == 1 else f"-x{a.scale}"
    write(os.path.join(a.out, f"bursty{suffix}.csv"), bursty(a.scale, a.weeks))
    write(os.path.join(a.out, f"novels{suffix}.csv"), novels(a.scale, a.weeks))
    write(os.path.join(a.out, f"sites{suffix}.csv"), sites(a.scale, a.weeks))


if __name__ == "__main__":
    main()
