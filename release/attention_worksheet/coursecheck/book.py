# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='attention_worksheet',
    course_cells=frozenset(('4da62b040bd2aafd', '576d493c4dad7038', '64719f94464bc81e', '6c5ca080a3f109a1', '97e62fa4bc261e72', '9c96db127678de76', 'c0e8737b4a420de9')),
    test_cells=frozenset(('0ebb5c07eeb56e47', '3af805805c99f620', '406c0219062e797c', '40a2a3563a575ca9', '478da3678e7046d2', '5444f835df4523c8', '5c8a2d859de11fca', '5f7de6012dad66b8', '72eb0443d5595fdf', '8b440b2537e46789', 'c440e1802dfdb33a', 'e3466ee478fd2e3b', 'ee11bd29be367b14', 'fc0d897cc16496e0')),
    answer_cells=(frozenset(('projection_weight_shapes',)), frozenset(('activation_shapes',)), frozenset(('score_shapes',)), frozenset(('output_shapes',)), frozenset(('SLOTS',)), frozenset(('K', 'Q', 'V')), frozenset(('H', 'Y')), frozenset(('linear_from_row_weight',)), frozenset(('chunk_after_projection', 'project_per_head')), frozenset(('K_0', 'K_1', 'Q_0', 'Q_1', 'V_0', 'V_1')), frozenset(('H_concat', 'Y_mha')), ),
    rules={
    },
    parts={'q1a_projection_weight_shapes': 'Q1(a)', 'q1b_activation_shapes': 'Q1(b)', 'q1c_score_shapes': 'Q1(c)', 'q1d_output_shapes': 'Q1(d)', 'q2_activation_slots': 'Q2', 'q2_combination_slots': 'Q2', 'q2_projection_slots': 'Q2', 'q3a_toy_qkv': 'Q3(a)', 'q3b_toy_output': 'Q3(b)', 'q3c_linear_bridge': 'Q3(c)', 'q4c_chunk_after_projection': 'Q4(c)', 'q4c_project_per_head': 'Q4(c)', 'q5a_head_splits': 'Q5(a)', 'q5b_concat_output': 'Q5(b)'},
    answers={'q1a_projection_weight_shapes': 0, 'q1b_activation_shapes': 1, 'q1c_score_shapes': 2, 'q1d_output_shapes': 3, 'q2_activation_slots': 4, 'q2_combination_slots': 4, 'q2_projection_slots': 4, 'q3a_toy_qkv': 5, 'q3b_toy_output': 6, 'q3c_linear_bridge': 7, 'q4c_chunk_after_projection': 8, 'q4c_project_per_head': 8, 'q5a_head_splits': 9, 'q5b_concat_output': 10},
)
