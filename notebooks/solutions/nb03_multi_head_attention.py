"""Reference solutions of notebook 03's exercises (multi-head attention, §3.2.2)."""

# Exercise 1: cross-attention with batch 2, target length 4, source length 6, d_model 512, 8 heads (d_k = 64).
predicted = {
    "q": (2, 8, 4, 64),  # (batch, heads, T, d_k): the queries come from the target
    "k": (2, 8, 6, 64),  # (batch, heads, S, d_k): the keys come from the source (the encoder's memory)
    "weights": (2, 8, 4, 6),  # (batch, heads, T, S): one row per query, one column per key
    "heads_out": (2, 8, 4, 64),  # (batch, heads, T, d_v): one weighted average of the values per query
    "output": (2, 4, 512),  # (batch, T, d_model): merged and projected by W^O
}


def attention_parameter_count(d_model, heads, d_k, d_v):
    """Exercise 2: W^Q and W^K are d_model × heads·d_k, W^V is d_model × heads·d_v, W^O is heads·d_v × d_model."""
    w_q = w_k = d_model * heads * d_k + heads * d_k  # weight + bias
    w_v = d_model * heads * d_v + heads * d_v
    w_o = heads * d_v * d_model + d_model
    return w_q + w_k + w_v + w_o


def multiply_adds(batch, q_len, k_len, d_model, heads):
    """Exercise 3: one multiply-add per weight per row for each projection, d_k per (query, key) pair per head."""
    d_k = d_model // heads
    project_q = batch * q_len * d_model * d_model  # T rows through W^Q
    project_kv = 2 * batch * k_len * d_model * d_model  # S rows through W^K and W^V
    scores = batch * heads * q_len * k_len * d_k  # Q Kᵀ in every head
    mix = batch * heads * q_len * k_len * d_k  # weights @ V in every head
    project_out = batch * q_len * d_model * d_model  # W^O
    return project_q + project_kv + scores + mix + project_out


question_heads = "b"
question_cross = "c"
