"""DGT: hard oblique trees learned by quantised gradient descent, also from bandit feedback
(Karthikeyan, Jain, Natarajan & Jain, TMLR 2022)."""
