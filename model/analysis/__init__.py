"""What is measured on a model: captures, head importance, attribution, the Inside view, work budgets, exports
and the lecture pack."""
