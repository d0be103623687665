"""Print a benchmark's results as a two-column table."""


def print_table(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    print(f"{'-' * width}  -----")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
