import json
import os
from dataclasses import dataclass


@dataclass
class Record:
    name: str
    count: int
    price: float


def load_records(path):
    records = []
    with open(path) as handle:
        for line in handle:
            data = json.loads(line)
            records.append(Record(data["name"], int(data["count"]), float(data["price"])))
    return records


def total_value(records):
    total = 0.0
    for record in records:
        total += record.count * record.price
    return total


def most_expensive(records):
    best = None
    for record in records:
        if best is None or record.price > best.price:
            best = record
    return best


def group_by_name(records):
    groups = {}
    for record in records:
        groups.setdefault(record.name, []).append(record)
    return groups


def summarize(records):
    groups = group_by_name(records)
    lines = []
    for name, items in sorted(groups.items()):
        count = sum(item.count for item in items)
        value = sum(item.count * item.price for item in items)
        lines.append(f"{name}: {count} items worth {value:.2f}")
    return "\n".join(lines)


def write_report(records, path):
    with open(path, "w") as handle:
        handle.write(summarize(records))
        handle.write("\n")
        handle.write(f"total: {total_value(records):.2f}\n")
        best = most_expensive(records)
        if best is not None:
            handle.write(f"most expensive: {best.name} at {best.price:.2f}\n")


def main():
    path = os.environ.get("RECORDS", "records.jsonl")
    records = load_records(path)
    write_report(records, "report.txt")
    print(summarize(records))


if __name__ == "__main__":
    main()
