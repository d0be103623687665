"""thinkprobe: structural profiling of LLM reasoning traces (Thought Graphs, 19 metrics, 5D-CP)."""

__version__ = "0.1.0"
