"""Complexity: how concentrated the map is (a few pixels carry the relevance, or all share it), computed
from the map alone. A concentrated map is easier to read; it says nothing about whether it is right, so
read these beside a faithfulness metric. A one-hot map wins them trivially; a constant map loses them."""
