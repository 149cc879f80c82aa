"""estimates"""
